"""Exactly-once `pykafka` writes (no pyspark here): each task writes inside one Kafka transaction that the driver
ends when Spark commits or aborts the job or micro-batch.

A task's transactional id is ``<prefix>-<Spark partition id>``: a retried or restarted attempt of the same task
initialises the same id, which fences the older attempt and aborts its open transaction. A micro-batch also
records its batch id in the transaction (TxnOffsetCommit to the consumer group named like the transactional id,
offset = batch id + 1, metadata = the query id), so a batch replayed after its transactions committed — the driver
died before Spark's checkpoint recorded it — is seen as done and not written again.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_spark.client.errors import TransactionError
from kafka_spark.client.producer.transactions import TransactionHandle
from kafka_spark.spark.sink.options import SinkOptions
from kafka_spark.spark.sink.rows import first_topic, produce_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.producer.producer import Producer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchMark:
    """The micro-batch a stream task writes: its query id (stable across restarts) and batch id."""

    query_id: str
    batch_id: int


@dataclass(frozen=True)
class TaskOutcome:
    """What one exactly-once task did: rows written, the open transaction to end (None when there is nothing to
    commit), and whether the batch was found already committed."""

    records: int
    transaction: TransactionHandle | None
    skipped: bool = False


def transactional_id(prefix: str, partition_id: int) -> str:
    """The transactional id of Spark partition `partition_id`'s task."""
    return f"{prefix}-{partition_id}"


def write_in_transaction(sink: SinkOptions, txn_id: str, batches: Iterator[pa.RecordBatch],
                         mark: BatchMark | None = None) -> TaskOutcome:
    """Write the rows in one transaction and leave it open for the driver; abort it if anything fails. The
    producer's connections and metadata come from the worker's pool, as at-least-once tasks' do."""
    from kafka_spark.client.producer.producer import Producer

    with sink.pooled_cluster() as cluster, Producer(cluster, transactional_id=txn_id) as producer:
        producer.init_transactions()  # fences older attempts of this task, aborting what they left open
        rows, marker_topic = _peek_topic(batches, sink.topic)
        if mark is not None and _already_committed(producer, txn_id, mark):
            log.info("%s: batch %d of query %s is already committed; not writing it again", txn_id, mark.batch_id,
                     mark.query_id)
            return TaskOutcome(0, None, skipped=True)
        producer.begin_transaction()
        try:
            count = produce_rows(producer, rows, sink.topic)
            if mark is not None and marker_topic is not None:
                _record_batch(producer, txn_id, marker_topic, mark)
            handle = producer.flush_transaction()
        except BaseException:
            _abort_quietly(producer, txn_id)
            raise
        if count == 0:
            producer.abort_transaction()  # it covers nothing: no request goes out, nothing for the driver to end
            return TaskOutcome(0, None)
        return TaskOutcome(count, handle)


def _peek_topic(batches: Iterator[pa.RecordBatch], topic: str | None) -> tuple[Iterable[pa.RecordBatch], str | None]:
    # The batch marker is keyed by a topic that exists (Kafka refuses offsets of unknown topics): the topic of the
    # task's first row, the same on a replay of the same micro-batch.
    for batch in batches:
        if batch.num_rows:
            return itertools.chain([batch], batches), first_topic(batch, topic)
    return (), None


def _record_batch(producer: Producer, txn_id: str, topic: str, mark: BatchMark) -> None:
    from kafka_spark.client.metadata import TopicPartition

    producer.send_offsets_to_transaction({TopicPartition(topic, 0): (mark.batch_id + 1, mark.query_id)}, txn_id)


def _already_committed(producer: Producer, txn_id: str, mark: BatchMark) -> bool:
    from kafka_spark.client.groups.admin import GroupAdmin

    committed = GroupAdmin(producer.cluster).committed(txn_id, require_stable=True)
    # Markers of a different query id (a new checkpoint reusing the prefix) say nothing about this one.
    return any(c.metadata == mark.query_id and c.offset > mark.batch_id for c in committed.values())


def _abort_quietly(producer: Producer, txn_id: str) -> None:
    try:
        producer.abort_transaction()
    except Exception as exc:  # the task's own error matters more; the next attempt aborts it anyway
        log.warning("%s: could not abort the transaction after a failure: %s", txn_id, exc)


def end_transactions(sink: SinkOptions, handles: Sequence[TransactionHandle], commit: bool) -> None:
    """EndTxn for every task's transaction, from the driver, all at once on the process's pooled connections.
    Committing raises the first transaction's error that could not commit (fenced or timed out); aborting goes
    on past transactions that are already gone."""
    if not handles:
        return
    from kafka_spark.client.producer.transactions import end_transactions as end_all

    with sink.pooled_cluster() as cluster:
        outcomes = end_all(cluster, handles, commit)
    for handle, error in zip(handles, outcomes, strict=True):
        if error is None:
            continue
        if commit or not isinstance(error, TransactionError):
            raise error
        log.info("%s: nothing to abort: %s", handle.transactional_id, error)

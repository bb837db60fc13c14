"""`df.write.format("pykafka")`: each task produces its rows with kafka_spark's producer — at-least-once, or with
`exactlyOnce=true` inside a Kafka transaction that the driver commits with the job. With `keyFormat` /
`valueFormat`, the task first serialises the key / value column with a registered schema, chosen (and with
`auto.register.schemas`, registered) on the driver when a subject is known there, else per topic in the task."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import DataType, StructType

from kafka_spark.errors import ConfigError
from kafka_spark.spark.sink.options import SinkOptions, check_columns, parse_sink_options
from kafka_spark.spark.worker_setup import prepare_worker

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.producer.transactions import TransactionHandle
    from kafka_spark.formats.encoding import WritePayloads
    from kafka_spark.spark.sink.transactions import TaskOutcome


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote; with exactlyOnce, the transaction the driver ends (None when there is none) and
    whether the task found its micro-batch already committed."""

    records: int
    transaction: TransactionHandle | None = None
    skipped: bool = False

    @classmethod
    def of(cls, outcome: TaskOutcome) -> KafkaCommitMessage:
        """The message of an exactly-once task."""
        return cls(outcome.records, outcome.transaction, outcome.skipped)


def kafka_writer(options: dict[str, str], schema: StructType, overwrite: bool) -> KafkaArrowWriter:
    """The writer of a `pykafka` write, after Spark's sink checks of the options and columns."""
    sink = checked_sink(options, schema, overwrite)
    # One prefix per job when none is given: the job's tasks (and their retries) share it, other jobs do not.
    prefix = sink.transactional_id_prefix or f"pykafka-{uuid.uuid4().hex}"
    return KafkaArrowWriter(sink, prefix)


def checked_sink(options: dict[str, str], schema: StructType, overwrite: bool) -> SinkOptions:
    """The sink options, after the save mode and the columns pass Spark's Kafka-sink checks."""
    if overwrite:
        raise ConfigError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                          "ErrorIfExists (default).")
    sink = parse_sink_options(options)
    serialised = [s.side for s in sink.payloads.sides] if sink.payloads is not None else []
    check_columns({f.name: f.dataType.simpleString() for f in schema.fields}, sink.topic, serialised)
    if sink.payloads is not None:
        sink = replace(sink, payloads=planned_payloads(sink.payloads, schema, sink.topic))
    return sink


def planned_payloads(payloads: WritePayloads, schema: StructType, topic: str | None) -> WritePayloads:
    """`payloads` with each side's schema derived from its column type, and its writer schema resolved in the
    registry now (registered, with auto.register.schemas) when its subject does not depend on each row's topic,
    so that a bad setting, an unknown subject or an incompatible schema fails the write before any task runs, and
    every task writes with the very schema resolved here."""
    from kafka_spark.formats.encoding import resolved, with_derived

    write_id = uuid.uuid4().hex  # the write's tasks share the writer schemas they resolve, other writes do not
    sides = {}
    for side in payloads.sides:
        column = next((f for f in schema.fields if f.name == side.side), None)
        if column is None:
            raise ConfigError(f"{side.describe()} is set, but there is no '{side.side}' column to serialise")
        planned = with_derived(side, arrow_type(column.dataType), write_id)
        sides[side.side] = resolved(planned, payloads.registry, topic)
    return replace(payloads, key=sides.get("key"), value=sides.get("value"))


def arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type PySpark gives a column of `data_type` (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_type

    try:
        return to_arrow_type(data_type, timezone="UTC")  # PySpark 4.1+
    except TypeError:
        return to_arrow_type(data_type)  # PySpark 4.0: UTC by default


def write_at_least_once(options: SinkOptions, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    """A task's rows through one producer, flushed; a delivery error fails the task. The producer's connections
    and metadata come from the worker's pool: the worker's next task does not connect again."""
    from kafka_spark.client.producer.producer import Producer
    from kafka_spark.spark.sink.rows import produce_rows, serialised

    with options.pooled_cluster() as cluster, Producer(cluster) as producer:
        rows = serialised(iterator, options.payloads, options.topic)
        return KafkaCommitMessage(produce_rows(producer, rows, options.topic))


def end_task_transactions(options: SinkOptions, messages: Sequence[WriterCommitMessage | None], commit: bool) -> None:
    """On the driver: commit or abort the transactions the tasks' messages hand over (exactlyOnce only)."""
    if not options.exactly_once:
        return
    from kafka_spark.spark.sink.transactions import end_transactions

    handles = [m.transaction for m in messages if isinstance(m, KafkaCommitMessage) and m.transaction is not None]
    end_transactions(options, handles, commit)


def partition_id() -> int:
    """The Spark partition id of the running task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None, "called outside a Spark task"
    return context.partitionId()


class KafkaArrowWriter(DataSourceArrowWriter):
    """Takes Arrow batches of `topic`/`key`/`value`/`partition`/`headers` rows and produces them to Kafka."""

    def __init__(self, options: SinkOptions, prefix: str) -> None:
        # Only picklable, validated options: the producer opens in write(), on the executor.
        self.options = options
        self.prefix = prefix

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        prepare_worker()
        if self.options.exactly_once:
            from kafka_spark.spark.sink.rows import serialised
            from kafka_spark.spark.sink.transactions import transactional_id, write_in_transaction

            txn_id = transactional_id(self.prefix, partition_id())
            rows = serialised(iterator, self.options.payloads, self.options.topic)
            return KafkaCommitMessage.of(write_in_transaction(self.options, txn_id, rows))
        return write_at_least_once(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        end_task_transactions(self.options, messages, commit=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        end_task_transactions(self.options, messages, commit=False)

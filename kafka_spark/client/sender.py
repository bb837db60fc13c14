"""The producer's sender thread: ships sealed batches, one Produce request per leader at a time, retries
retriable errors after a metadata refresh until ``delivery.timeout.ms``, and resolves the batches' futures.

`Producer` (producer.py) is the caller's side: it fills and seals the batches this side sends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.connection import BrokerConnection, InFlight, broker_error
from kafka_spark.client.delivery import QueuedBatch
from kafka_spark.client.errors import ProducerError, TransactionFencedError
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.partitioner import StickyPartitioner
from kafka_spark.client.records_adapter import encode_records
from kafka_spark.client.retry import Backoff, is_retriable, retries_end_within
from kafka_spark.client.transactions import FENCED_CODES, PRODUCE_MAX_VERSION, Transactions
from kafka_spark.errors import KafkaConnectionError, KafkaSparkError
from kafka_spark.protocol import ApiKey

# under the producer's name: one logger for the whole producer, as users configure it
log = logging.getLogger("kafka_spark.client.producer")

DUPLICATE_SEQUENCE_NUMBER = 46


class BatchSender:
    """The sending half of a producer; its state is set up by `Producer.__init__`."""

    cluster: Cluster
    config: ClientConfig
    _partitioner: StickyPartitioner
    _batches: dict[TopicPartition, QueuedBatch]
    _ready: list[QueuedBatch]
    _cond: threading.Condition
    _closed: bool
    _unsent: int
    _buffered: int
    _backoff: Backoff
    _producer_id: int
    _producer_epoch: int
    _sequences: dict[TopicPartition, int]
    _txn: Transactions | None
    _txn_error: BaseException | None
    _sender_error: BaseException | None

    def _seal(self, batch: QueuedBatch, topic: str) -> None:
        # called with the lock held: the batch stops taking records and is queued for sending
        if self._batches.get(batch.tp) is batch:
            del self._batches[batch.tp]
        self._ready.append(batch)
        if self.config.batch_size:
            # Under the lock: the cache only, never a network lookup.
            info = self.cluster.metadata.topic(topic)
            count = len(info.partitions) if info is not None and info.partitions else batch.tp.partition + 1
            self._partitioner.batch_completed(topic, count)

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    batches = self._take_ready()
                    if not batches:
                        if self._closed and not self._batches and not self._ready:
                            return
                        self._cond.wait(self._wait_time())
                        continue
                self._send_round(batches)
        except BaseException as exc:
            log.exception("producer sender failed")
            self._sender_error = exc
            with self._cond:
                for batch in [*self._ready, *self._batches.values()]:
                    self._finish(batch, error=ProducerError(f"the producer's sender stopped: {exc}"))
                self._ready.clear()
                self._batches.clear()
                self._cond.notify_all()

    def _wait_time(self) -> float:
        now = time.monotonic()
        linger = self.config.linger_ms / 1000
        times = [b.created + linger - now for b in self._batches.values()]
        times += [b.retry_at - now for b in self._ready]
        return max(min(times, default=0.5), 0.001)

    def _take_ready(self) -> list[QueuedBatch]:
        now = time.monotonic()
        linger = self.config.linger_ms / 1000
        for batch in list(self._batches.values()):
            if now - batch.created >= linger:
                self._seal(batch, batch.tp.topic)
        # one batch per partition per round, in queue order, and none overtakes a batch awaiting retry
        ready: list[QueuedBatch] = []
        keep: list[QueuedBatch] = []
        seen: set[TopicPartition] = set()
        for batch in self._ready:
            if batch.tp in seen or batch.retry_at > now:
                keep.append(batch)
            else:
                ready.append(batch)
            seen.add(batch.tp)
        self._ready = keep
        return ready

    def _send_round(self, batches: list[QueuedBatch]) -> None:
        # Metadata and producer-id lookups retry for default.api.timeout.ms; the oldest batch may have less.
        oldest = min((b.created for b in batches), default=time.monotonic())
        with retries_end_within(self.config.delivery_timeout_ms / 1000 - (time.monotonic() - oldest)):
            self._send_round_within(batches)

    def _send_round_within(self, batches: list[QueuedBatch]) -> None:
        if self._txn is not None:
            batches = self._join_transaction(batches)
        elif self.config.enable_idempotence and self._producer_id < 0:
            self._init_producer_id()
        by_leader: dict[int, list[QueuedBatch]] = {}
        for batch in batches:
            try:
                leader = self.cluster.leader(batch.tp).leader
            except KafkaSparkError as exc:
                self._failed(batch, exc)
                continue
            by_leader.setdefault(leader, []).append(batch)
        sent: list[tuple[BrokerConnection, InFlight, list[QueuedBatch]]] = []
        for leader, group in by_leader.items():
            try:
                conn = self.cluster.connection(leader)
                version = None if self._txn is None else min(conn.version(ApiKey.PRODUCE), PRODUCE_MAX_VERSION)
                handle = conn.send(ApiKey.PRODUCE, self._produce_body(group), version)
            except KafkaSparkError as exc:
                for batch in group:
                    self._failed(batch, exc)
                continue
            sent.append((conn, handle, group))
        for conn, handle, group in sent:
            try:
                response = conn.receive(handle)
            except KafkaSparkError as exc:
                for batch in group:
                    self._failed(batch, exc)
                continue
            self._complete(group, response)

    def _join_transaction(self, batches: list[QueuedBatch]) -> list[QueuedBatch]:
        # AddPartitionsToTxn before the first batch to a partition; a refusal fails the batches (not the sender)
        assert self._txn is not None
        try:
            self._txn.add_partitions(b.tp for b in batches)
        except KafkaSparkError as exc:
            for batch in batches:
                self._finish(batch, error=exc)
            return []
        return batches

    def _produce_body(self, group: Iterable[QueuedBatch]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in group:
            batch.attempts += 1
            if batch.encoded is None:
                if self._producer_id >= 0:
                    seq = self._sequences.get(batch.tp, 0)
                    batch.base_sequence = seq
                    self._sequences[batch.tp] = (seq + len(batch.records)) & 0x7FFFFFFF
                batch.encoded = encode_records(batch.records, self.config.compression_type, self._producer_id,
                                               self._producer_epoch, batch.base_sequence, self._txn is not None)
            topics.setdefault(batch.tp.topic, []).append({"index": batch.tp.partition, "records": batch.encoded})
        return {
            "transactional_id": None if self._txn is None else self._txn.transactional_id,
            "acks": self.config.acks, "timeout_ms": self.config.request_timeout_ms,
            "topic_data": [{"name": t, "topic_id": self.cluster.metadata.topic_id(t), "partition_data": ps}
                           for t, ps in topics.items()],
        }

    def _complete(self, group: list[QueuedBatch], response: Mapping[str, Any]) -> None:
        if self.config.acks == 0:
            for batch in group:
                self._finish(batch, base_offset=-1)
            return
        answers: dict[TopicPartition, Mapping[str, Any]] = {}
        for topic in response.get("responses", ()):
            name = topic.get("name") or self.cluster.metadata.topic_name(topic.get("topic_id"))
            if name is None:
                continue  # a topic id this client does not know: no batch can claim its answers
            for p in topic["partition_responses"]:
                answers[TopicPartition(name, p["index"])] = p
        for batch in group:
            p = answers.get(batch.tp)
            if p is None:
                self._failed(batch, ProducerError(f"the Produce response has no answer for {batch.tp}"))
                continue
            code = p["error_code"]
            if code == DUPLICATE_SEQUENCE_NUMBER or not code:
                self._finish(batch, base_offset=p["base_offset"], append_time=p.get("log_append_time_ms", -1))
                continue
            if self._txn is not None and code in FENCED_CODES:
                self._failed(batch, TransactionFencedError(
                    self._txn.transactional_id, f"Produce {batch.tp} was refused: a newer producer initialised "
                                                "this transactional id"))
                continue
            self._failed(batch, broker_error(code, f"Produce {batch.tp}", p.get("error_message")))

    def _failed(self, batch: QueuedBatch, error: BaseException) -> None:
        age = time.monotonic() - batch.created
        if is_retriable(error) and batch.attempts <= self.config.retries and \
                age < self.config.delivery_timeout_ms / 1000:
            log.info("%s: produce failed (%s); retrying", batch.tp, error)
            self.cluster.on_retriable(error)
            if isinstance(error, KafkaConnectionError):
                self.cluster.metadata.invalidate()
            batch.retry_at = time.monotonic() + self._backoff.delay(batch.attempts)
            with self._cond:
                self._ready.insert(0, batch)
            return
        self._finish(batch, error=error)

    def _finish(self, batch: QueuedBatch, base_offset: int = -1, append_time: int = -1,
                error: BaseException | None = None) -> None:
        batch.error, batch.base_offset, batch.append_time = error, base_offset, append_time
        if error is not None and self._txn is not None and self._txn_error is None:
            self._txn_error = error  # the transaction cannot commit now
        batch.done.set()
        with self._cond:
            self._unsent -= len(batch.records)
            self._buffered -= batch.size
            self._cond.notify_all()

    def _init_producer_id(self) -> None:
        def attempt(_: int) -> dict[str, Any]:
            conn = self.cluster.any_connection()
            response = conn.request(ApiKey.INIT_PRODUCER_ID, {
                "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
            if response["error_code"]:
                raise broker_error(response["error_code"], "InitProducerId")
            return response

        response = self.cluster.retry("InitProducerId", attempt)
        self._producer_id = response["producer_id"]
        self._producer_epoch = response["producer_epoch"]

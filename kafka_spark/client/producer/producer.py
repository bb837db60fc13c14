"""A producer: per-partition batches, linger, compression, acks, the Java partitioner, optional idempotence.

`send()` appends a record to its partition's open batch and returns a `RecordFuture`; `send_many()` appends
many records at once, into the same batches, and returns one `SentRecords`. Both wait while the queued records
take ``buffer.memory`` bytes (at most ``max.block.ms``). A sender thread ships batches that are full or older
than ``linger.ms`` with up to ``max.in.flight.requests.per.connection`` Produce requests unanswered per broker,
retries retriable errors after a metadata refresh until ``delivery.timeout.ms``, and resolves the futures with
the assigned offsets (`client/producer/sender.py` says how retries keep or may change a partition's order). With
``enable.idempotence`` (at most 5 requests in flight) the broker drops duplicates of retried batches by producer
id and sequence and the order is kept. With ``transactional.id`` records are written inside transactions
(`init_transactions`, `begin_transaction`, `commit_transaction`, `abort_transaction`; see
`client/producer/transactions.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.errors import ProducerError, TransactionError, TransactionFencedError
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.net.retry import Backoff, retries_end_within
from kafka_spark.client.producer import send_plan
from kafka_spark.client.producer.column_records import FEW_FOR_COLUMNS, ColumnRows, ColumnSource, lay_out, picked
from kafka_spark.client.producer.delivery import (
    BATCH_OVERHEAD,
    QueuedBatch,
    RecordFuture,
    RecordMetadata,
    SentRecords,
    Span,
    headers_size,
    record_size,
)
from kafka_spark.client.producer.partitioner import StickyPartitioner
from kafka_spark.client.producer.sender import BatchSender, PendingProduce
from kafka_spark.client.producer.sequences import MAX_IN_FLIGHT_IDEMPOTENT, Sequences
from kafka_spark.client.producer.transactions import (
    TransactionHandle,
    Transactions,
)
from kafka_spark.errors import ConfigError, KafkaSparkError

log = logging.getLogger(__name__)
# Like the Java producer, sending to a missing topic asks the broker to create it (where the broker allows it),
# unless this property says otherwise.
_AUTO_CREATE = "allow.auto.create.topics"
# Seconds a call waiting for buffer room keeps the open batches open for its records (Producer._wait_for_room).
_HOLD_OPEN = 0.5


class Producer(BatchSender):
    """A thread-safe producer with the Java producer's settings (``acks``, ``linger.ms``, ``batch.size``, ...)."""

    def __init__(self, config: ClientConfig | Mapping[str, Any] | Cluster, transactional_id: str | None = None) -> None:
        """`config`: the producer's properties, or a cluster whose connections and metadata it uses (and leaves
        open); `transactional_id` overrides the one the properties give (a cluster's connections serve any)."""
        shared: Cluster | None = None
        if isinstance(config, Cluster):
            shared, own = config, config.config
        else:
            own = config if isinstance(config, ClientConfig) else ClientConfig(config)
            if _AUTO_CREATE not in own.properties():
                own = own.with_overrides({_AUTO_CREATE: True})
        if transactional_id is not None:
            own = own.with_overrides({"transactional.id": transactional_id})
        _check_in_flight(own)
        self.cluster, self._owns_cluster = (shared, False) if shared is not None else (Cluster(own), True)
        self.config = own
        self._partitioner = StickyPartitioner()
        self._batches: dict[TopicPartition, QueuedBatch] = {}
        self._ready: dict[TopicPartition, deque[QueuedBatch]] = {}
        self._requests: dict[int, deque[PendingProduce]] = {}
        self._muted: set[TopicPartition] = set()
        self._size_caps: dict[str, int] = {}
        self._drain_from = 0
        self._cond = threading.Condition()
        self._closed = False
        self._unsent = 0
        self._buffered = 0  # bytes of queued records and their batches (the size estimate), for back-pressure
        self._room_waiters = 0  # callers waiting in _wait_for_room
        # Batches opened or sealed so far: the sender's next step depends on these, never on records added to a
        # batch already open, so a call that changed neither leaves it asleep (woken for nothing, it took the GIL
        # from the caller: ~13% of a Spark write's Python samples at 100 B sat on this condition variable).
        self._turns = 0
        # A caller faster than the brokers would otherwise queue a whole Spark task in memory.
        self.buffer_memory = self.config.buffer_memory
        self._max_block = self.config.max_block_ms / 1000
        self._max_age = self.config.metadata_max_age_ms / 1000
        self._backoff = Backoff(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms)
        tid = self.config.transactional_id
        self._seq = Sequences(tid is not None) if self.config.enable_idempotence else None
        self._txn = None if tid is None else Transactions(self.cluster, tid, self.config.transaction_timeout_ms)
        self._txn_error: BaseException | None = None
        self._sender = threading.Thread(target=self._run, name="kafka-spark-producer", daemon=True)
        self._sender_error: BaseException | None = None
        self._sender.start()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Producer({self.cluster!r}, acks={self.config.acks}, compression={self.config.compression_type})"

    # ---- the caller's side -----------------------------------------------------------------

    def partition_for(self, topic: str, key: bytes | None) -> int:
        """The partition a record with `key` goes to (murmur2 like the Java producer; sticky for None)."""
        return self._partitioner.partition(topic, key, self._partition_count(topic))

    def _partition_count(self, topic: str) -> int:
        # The cached entry answers almost every send; only a missing, failed or aged one costs a lookup.
        info = self.cluster.metadata.topic(topic)
        if info is not None and not info.error_code and time.monotonic() - info.updated < self._max_age:
            return len(info.partitions)
        # As the Java producer's send(): the metadata wait ends at max.block.ms, not default.api.timeout.ms.
        with retries_end_within(self._max_block):
            return len(self.cluster.topics([topic])[topic].partitions)

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             headers: Sequence[tuple[str, bytes | None]] = (), partition: int | None = None,
             timestamp_ms: int | None = None) -> RecordFuture:
        """Queue one record; the future resolves once the broker acknowledged it (per ``acks``)."""
        self._check_open()
        if partition is None:
            partition = self.partition_for(topic, key)
        else:
            self._check_partition(topic, partition, self._partition_count(topic))
        pairs = tuple(headers)
        size = record_size(len(key or b""), len(value or b""), headers_size(pairs) if pairs else 0)
        self._check_size(size)
        record = (key, value, pairs, _now_ms() if timestamp_ms is None else timestamp_ms)
        spans: list[Span] = []
        with self._cond:
            turns = self._turns
            self._wait_for_room(size)
            self._append(TopicPartition(topic, partition), [record], [0, size], 0, 1, range(1), spans)
            self._wake_sender(turns)
        batch, index, _ = spans[0]
        return RecordFuture(batch, index)

    def send_many(self, topic: str | Sequence[str], values: Sequence[bytes | None] | pa.Array,
                  keys: Sequence[bytes | None] | pa.Array | None = None,
                  partitions: Sequence[int | None] | pa.Array | None = None,
                  headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None = None,
                  timestamp_ms: int | None = None) -> SentRecords:
        """Queue many records as one `send()` per record would (same partitions, batches and errors), with one
        lock and one wake-up of the sender. `topic` is one topic or one per record; `keys`, `partitions` and
        `headers` are None or one entry per record. Every record is checked before any is queued: on an error
        (the one the first bad record's send() raises) none of them is; without `timestamp_ms` all get the
        time of the call.

        `values` and `keys` may be Arrow binary or string columns (and `partitions` an Arrow integer column):
        without `headers`, the records are then queued and encoded from the columns, with no Python object
        per record."""
        if isinstance(values, pa.Array) and headers is not None:  # records with headers are Python tuples
            values, keys = (_binary(c).to_pylist() if isinstance(c, pa.Array) else c for c in (values, keys))
            partitions = partitions.to_pylist() if isinstance(partitions, pa.Array) else partitions
        count = len(values)
        for name, column in (("keys", keys), ("partitions", partitions), ("headers", headers),
                             ("topics", None if isinstance(topic, str) else topic)):
            if column is not None and len(column) != count:
                raise ValueError(f"{name} has {len(column)} entries for {count} values")
        if not count:
            return SentRecords([], 0)
        self._check_open()
        pairs = None if headers is None else [tuple(h) if h else () for h in headers]
        stamp = _now_ms() if timestamp_ms is None else timestamp_ms
        records: send_plan.Records
        if isinstance(values, pa.Array):
            values, keys = _binary(values), None if keys is None else _binary(_column(keys))
            source = ColumnSource(keys, values, stamp)
            records = ColumnRows(source, range(count))
            key_bytes, value_bytes = (0 if source.key_lengths is None else np.maximum(source.key_lengths, 0),
                                      np.maximum(source.value_lengths, 0))
        else:
            records = list(zip(repeat(None) if keys is None else keys, values,
                               repeat(()) if pairs is None else pairs, repeat(stamp)))
            key_bytes, value_bytes = 0 if keys is None else send_plan.lengths(keys), send_plan.lengths(values)
        sizes = record_size(key_bytes, value_bytes,
                            0 if pairs is None else np.fromiter(map(headers_size, pairs), np.int64, count))
        groups, runs = send_plan.by_topic(topic, count)
        plans: dict[str, send_plan.TopicPlan] = {}
        errors: list[tuple[int, int, BaseException]] = []  # (record, step of send() that raises, error)
        for name, positions in groups.items():
            try:
                plans[name] = self._plan(name, positions, records, sizes, keys, partitions, errors)
            except KafkaSparkError as exc:  # the topic's first record would raise it
                errors.append((0 if positions is None else int(positions[0]), 0, exc))
        too_large = send_plan.first(sizes + BATCH_OVERHEAD > self.config.max_request_size)
        if too_large is not None:
            errors.append((too_large, 2, self._size_error(int(sizes[too_large]))))
        if errors:
            raise min(errors, key=lambda e: e[:2])[2]
        spans: list[Span] = []
        with self._cond:
            turns = self._turns
            self._wait_for_room(int(sizes.sum()))
            for name, lo, hi in runs:
                plan = plans[name]
                plan.queue(lo, hi, self._append, partial(self._partitioner.partition, name, None, plan.count), spans)
            if isinstance(records, ColumnRows):
                # The call's rows in batches still open laid out now, while its columns are in this core's cache
                # (when the batch is full, several calls later, they would be read from memory).
                lay_out({id(b): b.records for b, _, _ in spans if self._batches.get(b.tp) is b}.values(),
                        FEW_FOR_COLUMNS)
            self._wake_sender(turns)
        return SentRecords(spans, count)

    def _plan(self, topic: str, positions: np.ndarray | None, records: send_plan.Records, sizes: np.ndarray,
              keys: Sequence[bytes | None] | pa.Array | None, partitions: Sequence[int | None] | pa.Array | None,
              errors: list[tuple[int, int, BaseException]]) -> send_plan.TopicPlan:
        # one topic's records: partitions by key or as given (bad ones reported in `errors`), STICKY otherwise
        def pick(column: Any) -> Any:
            if positions is None:
                return column
            return column.take(positions) if isinstance(column, pa.Array) else [column[i] for i in positions.tolist()]

        count = self._partition_count(topic)
        n = len(records) if positions is None else len(positions)
        parts = np.full(n, send_plan.STICKY, dtype=np.int64) if keys is None else \
            send_plan.key_partitions(pick(keys), count)
        if partitions is not None:
            numbers, given = send_plan.explicit_partitions(pick(partitions))
            bad = send_plan.first(given & ((numbers < 0) | (numbers >= count)))
            if bad is not None:
                where = bad if positions is None else int(positions[bad])
                errors.append((where, 1, self._partition_error(topic, int(numbers[bad]), count)))
            parts = np.where(given, numbers, parts)
        return send_plan.TopicPlan(topic, count, picked(records, positions),
                                   sizes if positions is None else sizes[positions],
                                   parts, np.arange(n) if positions is None else positions)

    def _wake_sender(self, turns: int) -> None:
        # Under the lock, after appending: the sender acts on batches opened or sealed since `turns`.
        if self._turns != turns:
            self._cond.notify_all()

    def _seal(self, batch: QueuedBatch, topic: str) -> None:
        super()._seal(batch, topic)
        self._turns += 1
        if threading.current_thread() is not self._sender:
            # Encoded here, by the thread that made the records (they are in its core's cache; read by the
            # sender's thread they cost three times as much, measured): the sender adds the producer fields.
            batch.unsealed = batch.records.encode_unsealed(self.config.compression_type)

    def _check_open(self) -> None:
        self._check_running()
        if self._txn is not None:
            self._txn.require_open()

    def _check_running(self) -> None:
        if self._closed:
            raise ProducerError("the producer is closed")
        if self._sender_error is not None:
            raise ProducerError(f"the producer's sender stopped: {self._sender_error}")

    def _check_partition(self, topic: str, partition: int, count: int) -> None:
        if not 0 <= partition < count:
            raise self._partition_error(topic, partition, count)

    @staticmethod
    def _partition_error(topic: str, partition: int, count: int) -> ProducerError:
        return ProducerError(f"{topic} has partitions 0..{count - 1}, not {partition}")

    def _check_size(self, size: int) -> None:
        if size + BATCH_OVERHEAD > self.config.max_request_size:
            raise self._size_error(size)

    def _size_error(self, size: int) -> ProducerError:
        return ProducerError(f"a record of about {size} bytes exceeds max.request.size={self.config.max_request_size}")

    def _wait_for_room(self, size: int) -> None:
        # Under the lock. Back-pressure: while the queue holds buffer_memory, wait for deliveries; a call bigger
        # than the whole buffer still goes once the queue is empty. The open batches stay open (the sender does
        # not seal them at linger.ms meanwhile) while the batches already sealed can make the room: the records
        # waiting here then top them up, as the Java producer's do (its open batches hold their memory already),
        # rather than every wait sealing a partial batch per partition (measured: a third more batches, each
        # costing us and the broker).
        # After _HOLD_OPEN seconds without room, the sealed batches are not coming back soon (a partition without
        # a leader, say): the open ones go too, as they would at linger.ms, and their room with them.
        began = None
        self._room_waiters += 1
        try:
            while self._buffered and self._buffered + size > self.buffer_memory:
                self._check_running()
                now = time.monotonic()
                began = began or now
                if now >= began + self._max_block:
                    raise ProducerError(f"no room for {size} bytes of records within max.block.ms="
                                        f"{self.config.max_block_ms}: {self._buffered} of buffer.memory="
                                        f"{self.buffer_memory} bytes are queued and undelivered")
                unsealed = sum(b.size for b in self._batches.values())
                if unsealed == self._buffered or unsealed + size > self.buffer_memory \
                        or now > began + _HOLD_OPEN:
                    for batch in list(self._batches.values()):
                        self._seal(batch, batch.tp.topic)
                self._cond.notify_all()
                self._cond.wait(0.1)
        finally:
            self._room_waiters -= 1
            if began is not None:
                self._turns += 1  # the sender stopped lingering while this caller waited: it counts again now

    def _append(self, tp: TopicPartition, records: send_plan.Records, sums: send_plan.Sums, start: int, stop: int,
                positions: range | np.ndarray, spans: list[Span], sticky: bool = False) -> int:
        """Under the lock: put ``records[start:stop]`` into `tp`'s batches exactly as one send() each would;
        ``sums[i]`` is the size of ``records[:i]``. With `sticky` (null keys), stop after the record whose append
        sealed a batch, since the sticky partition moves on then. Returns the index after the last record taken."""
        cap = self._size_caps.get(tp.topic)
        limit = max(self.config.batch_size if cap is None else min(self.config.batch_size, cap), 1)
        i = start
        while i < stop:
            batch = self._batches.get(tp)
            sealed = False
            if batch is not None and batch.records and batch.size + int(sums[i + 1] - sums[i]) > limit:
                self._seal(batch, tp.topic)  # record i does not fit: it opens the next batch
                batch, sealed = None, True
            if batch is None:
                batch = self._batches[tp] = QueuedBatch(tp, time.monotonic())
                self._buffered += BATCH_OVERHEAD
                self._turns += 1
            # Record i goes in, then the ones after it that still fit: one send() each would fill the batch alike.
            end = i + 1
            if not (sticky and sealed):
                end = max(end, bisect_right(sums, int(sums[i]) + limit - batch.size, i + 1, stop + 1) - 1)
            spans.append((batch, len(batch.records), positions[i:end]))
            batch.records.extend(records[i:end])
            added = int(sums[end] - sums[i])
            batch.size += added
            self._buffered += added
            self._unsent += end - i
            i = end
            if batch.size >= limit:
                self._seal(batch, tp.topic)
                sealed = True
            if sticky and sealed:
                break
        return i

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now (ignoring linger) and wait until all of it is acknowledged or failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            for batch in list(self._batches.values()):
                self._seal(batch, batch.tp.topic)
            self._cond.notify_all()
            while self._unsent:
                if self._sender_error is not None:
                    raise ProducerError(f"the producer's sender stopped: {self._sender_error}")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"{self._unsent} records still unacknowledged")
                self._cond.wait(0.1 if remaining is None else min(remaining, 0.1))

    def close(self, timeout: float | None = None) -> None:
        """Flush, stop the sender and close connections."""
        if self._closed:
            return
        try:
            self.flush(timeout)
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._sender.join(timeout=5)
            if self._owns_cluster:
                self.cluster.close()

    # ---- transactions (with transactional.id) ----------------------------------------------

    def _transactions(self) -> Transactions:
        if self._txn is None:
            raise ProducerError("transactions need the transactional.id producer property")
        return self._txn

    @property
    def transaction(self) -> TransactionHandle:
        """The transactional id with the producer id and epoch that own its current transaction."""
        return self._transactions().handle

    def init_transactions(self) -> TransactionHandle:
        """Get the producer id and a new epoch for the transactional id; fences older producers of the id and
        aborts the transaction they left open."""
        handle = self._transactions().init()
        assert self._seq is not None  # a transactional producer is idempotent
        with self._cond:
            self._seq.reset(handle.producer_id, handle.producer_epoch)
        return handle

    def begin_transaction(self) -> None:
        """Start a transaction; the records sent until its end belong to it."""
        self._transactions().begin()
        self._txn_error = None

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int | tuple[int, str | None]],
                                    group_id: str) -> None:
        """Commit a group's offsets (next offset, optionally with metadata) as part of the transaction."""
        entries = {tp: v if isinstance(v, tuple) else (v, None) for tp, v in offsets.items()}
        self._transactions().add_offsets(group_id, entries)

    def flush_transaction(self) -> TransactionHandle:
        """Deliver every record of the open transaction and leave it open: the handle lets this or another
        process end it (`client.transactions.end_transaction`). Raises if a record failed."""
        txn = self._transactions()
        txn.require_open()
        self.flush()
        if self._txn_error is not None:
            error = self._txn_error
            if isinstance(error, TransactionFencedError):
                raise error
            raise TransactionError(txn.transactional_id, f"a record of the transaction was not delivered ({error}); "
                                                         "the transaction must be aborted") from error
        return txn.handle

    def commit_transaction(self) -> None:
        """Deliver the transaction's records, then commit it (EndTxn): they become visible to read_committed."""
        self.flush_transaction()
        self._transactions().end(commit=True)

    def abort_transaction(self) -> None:
        """Abort the open transaction: its records and offsets are never visible to read_committed readers."""
        txn = self._transactions()
        try:
            self.flush()
        except ProducerError as exc:
            log.info("%s: records still failing while aborting: %s", txn.transactional_id, exc)
        txn.end(commit=False)
        if self._txn_error is not None:
            # A batch that failed may still have been appended, leaving the broker's sequence ahead of ours: a new
            # epoch starts every partition at 0 (the Java producer bumps the epoch after such an abort).
            self.init_transactions()


def producer_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The client properties a `Producer` given `properties` runs with, for a cluster made outside it."""
    return dict(properties) if _AUTO_CREATE in properties else {**properties, _AUTO_CREATE: True}


def _check_in_flight(config: ClientConfig) -> None:
    # Java's ProducerConfig rule: more than 5 in flight with idempotence asked for explicitly is an error; when
    # only transactional.id implies it, Java turns idempotence off and then refuses the transactional.id.
    in_flight = config.max_in_flight
    if not config.enable_idempotence or in_flight <= MAX_IN_FLIGHT_IDEMPOTENT:
        return
    if "enable.idempotence" in config.properties():
        raise ConfigError("Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent "
                          "producer.")
    raise ConfigError("Cannot set a transactional.id without also enabling idempotence. (Idempotence is off "
                      f"because max.in.flight.requests.per.connection is set to {in_flight}, which is greater than "
                      "5.)")


def _column(column: Any) -> pa.Array:
    # keys given as Python values beside Arrow values
    return column if isinstance(column, pa.Array) else pa.array(column, pa.binary())


def _binary(column: pa.Array) -> pa.Array:
    # strings go out as their UTF-8 bytes; a column of the null type holds only nulls
    kind = column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return column
    if pa.types.is_string(kind) or pa.types.is_null(kind):
        return column.cast(pa.binary())
    if pa.types.is_large_string(kind):
        return column.cast(pa.large_binary())
    raise TypeError(f"keys and values must be binary or string columns, not {kind}")


def _now_ms() -> int:
    return int(time.time() * 1000)


__all__ = ["Producer", "RecordFuture", "RecordMetadata", "SentRecords"]

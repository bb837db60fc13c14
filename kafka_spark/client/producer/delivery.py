"""What a producer queues and what its callers wait on: the per-partition `QueuedBatch` with its size estimate,
and the delivery handles `RecordFuture` (one `send()`) and `SentRecords` (one `send_many()`), which resolve with
their batches (or, for a batch split after the broker refused it as too large, with its pieces)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.column_records import BatchRecords
from kafka_spark.client.records_adapter import OutgoingRecord, Unsealed

BATCH_OVERHEAD = 61
"""The v2 batch header's bytes, counted in a batch's size estimate before encoding."""
# per record (v2 varints, attributes, deltas) and per header: at least what the encoder writes
_RECORD_OVERHEAD = 21
_HEADER_OVERHEAD = 4


def record_size(key_bytes: Any, value_bytes: Any, header_bytes: Any) -> Any:
    """A record's share of a batch's size estimate (ints, or numpy arrays for many records)."""
    return _RECORD_OVERHEAD + key_bytes + value_bytes + header_bytes


def headers_size(headers: Sequence[tuple[str, bytes | None]]) -> int:
    """The headers' part of `record_size`."""
    return sum(len(k.encode()) + len(v or b"") + _HEADER_OVERHEAD for k, v in headers)


def queued_size(record: OutgoingRecord) -> int:
    """`record_size` of a queued record."""
    key, value, headers, _ = record
    return record_size(len(key or b""), len(value or b""), headers_size(headers) if headers else 0)


@dataclass(frozen=True)
class RecordMetadata:
    """Where a record was written; `offset` is -1 with acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class RecordFuture:
    """The outcome of one record (a `send()`, or one of `SentRecords.futures()`): `get()` waits for the
    `RecordMetadata` or raises the delivery error."""

    # A record's future is its batch plus an index: one event per batch, not per record, keeps send() cheap.
    __slots__ = ("_batch", "_index")

    def __init__(self, batch: QueuedBatch, index: int) -> None:
        self._batch = batch
        self._index = index

    @property
    def done(self) -> bool:
        """True once delivered or failed."""
        return self._batch.done.is_set()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata; raises its delivery error, or TimeoutError."""
        batch = self._batch
        if not batch.done.wait(timeout):
            raise TimeoutError("the record was not acknowledged in time")
        batch, index = batch.holding(self._index)
        if batch.error is not None:
            raise batch.error
        offset = batch.base_offset + index if batch.base_offset >= 0 else -1
        ts = batch.append_time if batch.append_time >= 0 else batch.records[index][3]
        return RecordMetadata(batch.tp.topic, batch.tp.partition, offset, ts)


Span = tuple["QueuedBatch", int, "range | np.ndarray"]
"""Where some of a send_many() call's records went: their batch, the first one's index in it, and their positions
in the call."""


class SentRecords:
    """The outcome of one `send_many()`: done when every batch holding its records is; `get()` waits for all of
    them and raises the first delivery error. Per-record futures are made only when asked for."""

    __slots__ = ("_spans", "count")

    def __init__(self, spans: list[Span], count: int) -> None:
        self._spans = spans
        self.count = count

    @property
    def done(self) -> bool:
        """True once every record is delivered or failed."""
        return all(batch.done.is_set() for batch, _, _ in self._spans)

    def get(self, timeout: float | None = None) -> int:
        """Wait for every record; the number of records, or the first failed batch's delivery error (TimeoutError
        when `timeout` seconds pass first)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for batch, _, _ in self._spans:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
            if not batch.done.wait(remaining):
                raise TimeoutError("the records were not acknowledged in time")
            if batch.error is not None:
                raise batch.error
        return self.count

    def futures(self) -> list[RecordFuture]:
        """One future per record, in the order the records were given."""
        out: list[RecordFuture | None] = [None] * self.count
        for batch, index, positions in self._spans:
            for offset, position in enumerate(positions.tolist() if isinstance(positions, np.ndarray) else positions):
                out[position] = RecordFuture(batch, index + offset)
        # Every position is covered by exactly one span, so no None is left.
        return cast("list[RecordFuture]", out)


@dataclass(eq=False)
class QueuedBatch:
    """One partition's records queued together: open while it takes records, then sent as one record batch.

    An idempotent producer numbers it when it is first sent (`producer_id`, `producer_epoch`, `base_sequence`);
    `sequence_reset` says those were rewritten since the last send (see `client/producer/sequences.py`). A batch split
    into `pieces` (`client/producer/batch_split.py`) is done once all of them are, with the first failed piece's error;
    a piece knows its `parent` and the index of its first record there (`first`). Batches compare by identity."""

    tp: TopicPartition
    created: float
    records: BatchRecords = field(default_factory=BatchRecords)
    size: int = BATCH_OVERHEAD
    attempts: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    sequence_reset: bool = False
    encoded: bytes | Unsealed | None = None
    # its records encoded by the caller's thread once it was full, still without producer fields (which the
    # sender adds): the thread that made the records reads them while they are in its core's cache
    unsealed: Unsealed | None = None
    retry_at: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    base_offset: int = -1
    append_time: int = -1
    pieces: list[QueuedBatch] = field(default_factory=list)
    parent: QueuedBatch | None = None
    first: int = 0

    def holding(self, index: int) -> tuple[QueuedBatch, int]:
        """The batch that was sent with record `index` of this one (this batch, or a piece of a split), and the
        record's index there."""
        batch = self
        while batch.pieces:
            batch = next(p for p in reversed(batch.pieces) if p.first <= index)
            index -= batch.first
        return batch, index

    def resolve(self, base_offset: int = -1, append_time: int = -1, error: BaseException | None = None) -> None:
        """Set the outcome and wake the waiters; the last piece of a split resolves its parent too."""
        self.error, self.base_offset, self.append_time = error, base_offset, append_time
        self.done.set()
        parent = self.parent
        if parent is not None and all(p.done.is_set() for p in parent.pieces):
            failed = next((p.error for p in parent.pieces if p.error is not None), None)
            parent.resolve(error=failed)

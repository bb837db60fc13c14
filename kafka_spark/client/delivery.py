"""What a producer queues and what its callers wait on: the per-partition `QueuedBatch`, and the delivery handles
`RecordFuture` (one `send()`) and `SentRecords` (one `send_many()`), which resolve with their batches."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.records_adapter import OutgoingRecord

BATCH_OVERHEAD = 61
"""The v2 batch header's bytes, counted in a batch's size estimate before encoding."""


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
        if batch.error is not None:
            raise batch.error
        offset = batch.base_offset + self._index if batch.base_offset >= 0 else -1
        ts = batch.append_time if batch.append_time >= 0 else batch.records[self._index][3]
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
    `sequence_reset` says those were rewritten since the last send (see `client/sequences.py`). Batches compare
    by identity."""

    tp: TopicPartition
    created: float
    records: list[OutgoingRecord] = field(default_factory=list)
    size: int = BATCH_OVERHEAD
    attempts: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    sequence_reset: bool = False
    encoded: bytes | bytearray | None = None
    retry_at: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    base_offset: int = -1
    append_time: int = -1

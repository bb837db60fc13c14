"""read_committed: drop the records of aborted transactions, the way Kafka's consumer does.

A fetch response (or a segment's .txnindex) lists aborted transactions as (producer id, first
offset). Walking batches in offset order, a producer's transaction counts as aborted from its first
offset until that producer's ABORT control marker; its transactional batches in between are dropped.
Control batches are never returned as records, in either isolation level.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from kafka_spark.records.constants import ControlType

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"


def check_isolation(isolation: str) -> bool:
    """True for read_committed; raise ValueError for anything but the two Kafka levels."""
    if isolation == READ_COMMITTED:
        return True
    if isolation == READ_UNCOMMITTED:
        return False
    raise ValueError(f"isolation must be {READ_UNCOMMITTED!r} or {READ_COMMITTED!r}, not {isolation!r}")


class AbortedTransactions:
    """Per-partition state that decides, batch by batch, which transactional batches to drop."""

    def __init__(self, aborted: Iterable[tuple[int, int]] | None) -> None:
        self._pending = [(int(first), int(pid)) for pid, first in (aborted or ())]
        heapq.heapify(self._pending)
        self._open: set[int] = set()

    def is_aborted(self, producer_id: int, last_offset: int, is_transactional: bool) -> bool:
        """Whether a data batch ending at `last_offset` belongs to an aborted transaction."""
        self._advance(last_offset)
        return is_transactional and producer_id in self._open

    def control(self, producer_id: int, last_offset: int, marker: int | None) -> None:
        """Account for a control batch; an ABORT marker closes the producer's aborted transaction."""
        self._advance(last_offset)
        if marker == ControlType.ABORT:
            self._open.discard(producer_id)

    def _advance(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0][0] <= offset:
            self._open.add(heapq.heappop(pending)[1])

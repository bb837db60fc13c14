"""The last stable offset of a partition from its files: where `read_committed` readers stop.

A broker's LSO is the first offset of the oldest transaction still open, or the high watermark
when none is. The files give it the way a broker rebuilds its producer state at load: the newest
producer `.snapshot` at or below the high watermark lists the transactions open at its offset
(`current_txn_first_offset`), and replaying the batch headers from there opens a transaction at a
producer's first transactional batch and closes it at that producer's control batch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from kafka_spark.segments.errors import SnapshotCorruptError
from kafka_spark.segments.logdir import read_bytes
from kafka_spark.segments.segment import Segment
from kafka_spark.segments.snapshot import read_snapshot
from kafka_spark.segments.storage import Storage

log = logging.getLogger(__name__)


def open_transactions_at(storage: Storage, snapshots: Mapping[int, str], limit: int) -> tuple[int, dict[int, int]]:
    """(offset, producer id -> first offset of its open transaction) from the newest readable snapshot
    at or below `limit`; (-1, {}) when there is none, meaning: replay from the first segment."""
    for offset in sorted((o for o in snapshots if o <= limit), reverse=True):
        data = read_bytes(storage, snapshots[offset])
        if data is None:  # removed by the broker since the listing
            continue
        try:
            entries = read_snapshot(data)
        except SnapshotCorruptError as exc:
            # A broker discards an unreadable snapshot and rebuilds from an older one or the log.
            log.warning("%s: %s; using an older snapshot", snapshots[offset], exc)
            continue
        return offset, {e.producer_id: e.current_txn_first_offset for e in entries
                        if e.current_txn_first_offset is not None}
    return -1, {}


def last_stable_offset(segments: Sequence[Segment], storage: Storage, snapshots: Mapping[int, str],
                       high_watermark: int) -> int:
    """The LSO of a log whose high watermark is `high_watermark` (segments in offset order)."""
    since, open_txns = open_transactions_at(storage, snapshots, high_watermark)
    for i, seg in enumerate(segments):
        if seg.base_offset >= high_watermark:
            break
        if i + 1 < len(segments) and segments[i + 1].base_offset <= since:
            continue  # wholly before the snapshot
        start = 0
        if since > seg.base_offset:
            found = seg.batch_at(since)
            if found is None:
                continue
            start = found.position
        for info in seg.batches(start):
            first = info.base_offset if info.base_offset is not None else info.last_offset
            if first >= high_watermark:
                break
            if info.last_offset < since or not info.has_producer_id:
                continue
            if info.is_control:
                open_txns.pop(info.producer_id, None)
            elif info.is_transactional:
                open_txns.setdefault(info.producer_id, first)
    return min([high_watermark, *(o for o in open_txns.values() if o < high_watermark)])


__all__ = ["last_stable_offset", "open_transactions_at"]

"""One partition's log, from its directory alone: segments, log start, log end, high watermark,
seeks, aborted transactions and records.

The offsets follow the broker's own rules when it loads a log: the start is the larger of the
log-start checkpoint and the first segment's base; the high watermark is the checkpointed value
clamped into [start, end]; the end is the offset after the last complete batch of the last segment.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterator
from functools import cached_property

import pyarrow as pa

from kafka_spark.records import Decoder
from kafka_spark.segments import names
from kafka_spark.segments.checkpoints import EpochEntry, parse_leader_epochs
from kafka_spark.segments.chunks import ScanStats
from kafka_spark.segments.listing import SegmentFiles, SegmentListing, list_segments
from kafka_spark.segments.logdir import LogDirCheckpoints, read_checkpoints, read_text
from kafka_spark.segments.read import read_segment
from kafka_spark.segments.segment import Segment
from kafka_spark.segments.stable import last_stable_offset
from kafka_spark.segments.storage import Storage, resolve
from kafka_spark.segments.txnindex import AbortedTxn, aborted_between


def _resolve_swaps(listing: SegmentListing, storage: Storage) -> list[SegmentFiles]:
    """Apply what a broker does at load with `.swap` segments: each replaces the segments it covers.

    A swap at or above a `.cleaned` file belongs to an unfinished split and is ignored, as Kafka does.
    """
    segments = list(listing.segments)
    for swap in listing.swaps:
        if listing.min_cleaned is not None and swap.base_offset >= listing.min_cleaned:
            continue
        with Segment(swap, storage) as seg:
            end = seg.next_offset()
        segments = [s for s in segments if not swap.base_offset <= s.base_offset < max(end, swap.base_offset + 1)]
        segments.append(swap)
    return sorted(segments, key=lambda s: s.base_offset)


class PartitionLog:
    """The log of one partition directory. Open with `PartitionLog.open(path)`; `close()` ends it."""

    def __init__(self, path: str, topic: str, partition: int, segments: list[Segment],
                 checkpoints: LogDirCheckpoints | None = None, storage: Storage | None = None,
                 snapshots: dict[int, str] | None = None) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segments = segments
        self.checkpoints = checkpoints or LogDirCheckpoints()
        self.storage = storage
        self.snapshots = snapshots or {}
        self._bases = [s.base_offset for s in segments]

    @classmethod
    def open(cls, path: str, *, filesystem: object | None = None,
             checkpoints: LogDirCheckpoints | None = None) -> PartitionLog:
        """Open a `<topic>-<partition>` directory; the log dir's checkpoints are read from its parent."""
        storage, inner = resolve(path, filesystem)
        inner = inner.rstrip("/") or inner
        name = posixpath.basename(inner)
        parsed = names.parse_partition_dir(name, include_internal=True)
        if parsed is None:
            raise ValueError(f"{path}: not a <topic>-<partition> directory")
        if checkpoints is None:
            checkpoints = read_checkpoints(storage, posixpath.dirname(inner) or ".")
        listing = list_segments(storage, inner)
        files = _resolve_swaps(listing, storage)
        return cls(inner, parsed[0], parsed[1], [Segment(f, storage) for f in files], checkpoints, storage,
                   listing.snapshots)

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PartitionLog({self.topic!r}, {self.partition}, segments={len(self.segments)})"

    def close(self) -> None:
        for s in self.segments:
            s.close()

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    # ---- offsets ---------------------------------------------------------------------------

    @cached_property
    def log_start_offset(self) -> int:
        """The first offset a consumer may read (records below it may still sit in the first segment)."""
        first = self._bases[0] if self._bases else 0
        return max(self.checkpoints.log_start_offsets.get(self.key, 0), first)

    @cached_property
    def log_end_offset(self) -> int:
        """The offset after the last complete batch of the newest segment (its base if it is empty)."""
        if not self.segments:
            return self.log_start_offset
        return max(self.segments[-1].next_offset(), self.log_start_offset)

    @cached_property
    def high_watermark(self) -> int:
        """The checkpointed high watermark clamped into [log start, log end] (the broker's rule at load)."""
        hw = self.checkpoints.high_watermarks.get(self.key, 0)
        return min(max(hw, self.log_start_offset), self.log_end_offset)

    @cached_property
    def last_stable_offset(self) -> int:
        """Where `read_committed` readers stop: the first offset of the oldest open transaction below the
        high watermark (from the producer snapshot and the batches after it), else the high watermark."""
        return self.stable_offset_below(self.high_watermark)

    def stable_offset_below(self, high_watermark: int) -> int:
        """The last stable offset had the high watermark been `high_watermark`."""
        if self.storage is None:
            return high_watermark
        return last_stable_offset(self.segments, self.storage, self.snapshots, high_watermark)

    @property
    def recovery_point(self) -> int | None:
        """Offset up to which the broker had flushed the log to disk, if checkpointed."""
        return self.checkpoints.recovery_points.get(self.key)

    def leader_epochs(self) -> list[EpochEntry]:
        """The partition's leader-epoch-checkpoint entries (empty if there is none)."""
        assert self.storage is not None
        path = self.storage.join(self.path, "leader-epoch-checkpoint")
        text = read_text(self.storage, path)
        return parse_leader_epochs(text, path) if text is not None else []

    # ---- seeks -----------------------------------------------------------------------------

    def segment_for(self, offset: int) -> int:
        """Index in `segments` of the segment that would hold `offset` (0 if it is below them all)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def segments_for(self, start: int, end: int | None) -> list[Segment]:
        """The segments that may hold offsets in [start, end)."""
        if not self.segments:
            return []
        hi = len(self.segments) if end is None else bisect.bisect_left(self._bases, end)
        return self.segments[self.segment_for(start) : max(hi, self.segment_for(start) + 1)]

    def position_of(self, offset: int) -> tuple[Segment, int] | None:
        """(segment, byte position) of the first batch whose last offset is ≥ `offset`; None past the end."""
        for seg in self.segments[self.segment_for(offset) :]:
            info = seg.batch_at(offset)
            if info is not None:
                return seg, info.position
        return None

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The first offset ≥ the log start whose timestamp is ≥ `timestamp` (None if there is none)."""
        for i, seg in enumerate(self.segments):
            index = seg.time_index()
            # A rolled segment's time index ends with its largest timestamp; the last one may lag.
            if i + 1 < len(self.segments) and len(index) and int(index.timestamps[-1]) < timestamp:
                continue
            found = seg.offset_for_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def aborted_transactions(self, start: int, end: int | None = None) -> list[AbortedTxn]:
        """Aborted transactions that may hold records in [start, end), from this and later segments'
        `.txnindex` (an abort's marker can sit segments after the transaction began)."""
        out: list[AbortedTxn] = []
        for seg in self.segments[self.segment_for(start) :]:
            found = seg.aborted_transactions()
            out += aborted_between(found, start, end)
            if end is not None and any(e.last_stable_offset >= end for e in found):
                break
        return out

    # ---- records ---------------------------------------------------------------------------

    def read(self, start: int | None = None, end: int | None = None, *, isolation: str = "read_uncommitted",
             include_headers: bool = False, verify_crc: bool = True, skip_corrupt: bool = False,
             stats: ScanStats | None = None, views: bool = False) -> Iterator[pa.RecordBatch]:
        """Arrow batches (Spark's Kafka schema) of offsets [start, end), by default log start to log end
        (`views`: keys and values as binary_view arrays into the bytes read, see `decode_to_arrow`).

        Records below the log start offset are never returned, even where they remain on disk.
        """
        lo = self.log_start_offset if start is None else max(start, self.log_start_offset)
        aborted = self.aborted_transactions(lo, end) if isolation == "read_committed" else []
        decoder = Decoder()
        stats = stats if stats is not None else ScanStats()
        for seg in self.segments_for(lo, end):
            nxt = bisect.bisect_right(self._bases, seg.base_offset)
            hint = self._bases[nxt] if nxt < len(self._bases) else None
            yield from read_segment(seg, self.topic, self.partition, start_offset=lo, end_offset=end,
                                    aborted=aborted, isolation=isolation, include_headers=include_headers,
                                    verify_crc=verify_crc, skip_corrupt=skip_corrupt, stats=stats,
                                    decoder=decoder, next_offset_hint=hint, views=views)


__all__ = ["PartitionLog"]

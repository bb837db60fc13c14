"""One segment: its `.log` opened once (size fixed), its indexes, and seeks by offset and time.

Index entries are hints: a seek takes the last trustworthy entry at or below the target and scans
forward for the first batch whose last offset reaches it, so it is right whether the entry is the
exact batch (leader writes) or a chunk of several (follower and cleaner writes). Should a stale
index point into the middle of a batch, the scan is retried from the start of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from kafka_spark.errors import DataLossError
from kafka_spark.records import iter_records
from kafka_spark.records.model import BatchInfo
from kafka_spark.segments.chunks import DEFAULT_CHUNK_BYTES, Chunk, ScanStats, scan_chunks
from kafka_spark.segments.errors import SegmentCorruptError
from kafka_spark.segments.indexes import (
    OffsetIndex,
    TimeIndex,
    ends_entries,
    offset_index,
    offset_slots,
    time_index,
    time_slots,
)
from kafka_spark.segments.listing import SegmentFiles
from kafka_spark.segments.names import DELETED
from kafka_spark.segments.storage import LocalStorage, Source, Storage
from kafka_spark.segments.txnindex import AbortedTxn, read_txn_index


class Segment:
    """A segment's files; the `.log` is opened on first use and its size fixed then (`close()` ends it)."""

    def __init__(self, files: SegmentFiles, storage: Storage | None = None) -> None:
        self.files = files
        self.storage = storage or LocalStorage()
        self._source: Source | None = None
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._aborted: list[AbortedTxn] | None = None

    def __repr__(self) -> str:
        return f"Segment({self.files.log!r})"

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_offset(self) -> int:
        return self.files.base_offset

    @property
    def path(self) -> str:
        return self.files.log

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = self._open(self.files.log)
        return self._source

    def _open(self, path: str) -> Source:
        # A live broker renames a segment's files to `.deleted` (retention, compaction) and removes
        # them a minute later: a file listed a moment ago is read under its new name.
        try:
            return self.storage.open(path)
        except FileNotFoundError:
            try:
                return self.storage.open(path + DELETED)
            except FileNotFoundError:
                raise DataLossError(f"{path} was deleted (retention or compaction) before it could be read") from None

    @property
    def size(self) -> int:
        """Bytes of the `.log` when it was opened."""
        return self.source.size

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    def _read_whole(self, path: str | None, slots: Callable[[bytes], np.ndarray] | None = None) -> bytes:
        """The file at `path`; for an index (`slots` parses its slots), only up to the first slot past its
        entries (`indexes.ends_entries`): the active segment's index is preallocated (10 MiB by default) and
        the rest is zeros."""
        if path is None:
            return b""
        # A live broker trims the active segment's preallocated index when it rolls the segment: a
        # read can meet the shorter file, which a second open sees whole.
        for _ in range(2):
            try:
                with _closing(self._open(path)) as f:
                    if slots is None:
                        return f.read(0, f.size)
                    return _index_start(f, slots)
            except EOFError:
                continue
            except DataLossError:  # an index is only a hint: without it, seeks scan from the start
                return b""
        return b""

    # ---- indexes ---------------------------------------------------------------------------

    def offset_index(self) -> OffsetIndex:
        """The trustworthy entries of the `.index` (empty if there is none)."""
        if self._offset_index is None:
            data = self._read_whole(self.files.index, offset_slots)
            self._offset_index = offset_index(data, self.base_offset, self.size)
        return self._offset_index

    def time_index(self) -> TimeIndex:
        """The trustworthy entries of the `.timeindex` (empty if there is none)."""
        if self._time_index is None:
            self._time_index = time_index(self._read_whole(self.files.time_index, time_slots), self.base_offset)
        return self._time_index

    def aborted_transactions(self) -> list[AbortedTxn]:
        """The entries of the `.txnindex` (aborted transactions whose marker is in this segment)."""
        if self._aborted is None:
            self._aborted = read_txn_index(self._read_whole(self.files.txn_index), self.files.txn_index or "")
        return self._aborted

    # ---- batches ---------------------------------------------------------------------------

    def chunks(self, start: int = 0, end: int | None = None, *, verify_crc: bool = False,
               skip_corrupt: bool = False, stats: ScanStats | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
               next_offset_hint: int | None = None) -> Iterator[Chunk]:
        """Whole batches of bytes [start, end) in chunks (see `scan_chunks`)."""
        return scan_chunks(self.source, self.base_offset, start, end, verify_crc=verify_crc,
                           skip_corrupt=skip_corrupt, stats=stats, chunk_bytes=chunk_bytes,
                           next_offset_hint=next_offset_hint)

    def batches(self, start: int = 0, end: int | None = None, *, verify_crc: bool = False,
                skip_corrupt: bool = False, stats: ScanStats | None = None) -> Iterator[BatchInfo]:
        """Batch headers of bytes [start, end), with `position` the byte position in the file."""
        for chunk in self.chunks(start, end, verify_crc=verify_crc, skip_corrupt=skip_corrupt, stats=stats):
            for info in chunk.batches:
                yield replace(info, position=chunk.position + info.position)

    def _first_batch(self, start: int, want: Callable[[BatchInfo], bool]) -> BatchInfo | None:
        for info in self.batches(start):
            if want(info):
                return info
        return None

    def _seek_batch(self, start: int, want: Callable[[BatchInfo], bool]) -> BatchInfo | None:
        try:
            return self._first_batch(start, want)
        except SegmentCorruptError:
            if start == 0:
                raise
            return self._first_batch(0, want)

    def batch_at(self, offset: int) -> BatchInfo | None:
        """The first batch whose last offset is at or above `offset` (None if the segment ends before)."""
        _, position = self.offset_index().lookup(offset)
        return self._seek_batch(position, lambda b: b.last_offset >= offset)

    def next_offset(self) -> int:
        """The offset after the last complete batch; the base offset if there is none (an empty segment)."""
        index = self.offset_index()
        start = int(index.positions[-1]) if len(index) else 0
        last = None
        try:
            for info in self.batches(start):
                last = info
        except SegmentCorruptError:
            if start == 0:
                raise
            for info in self.batches(0):
                last = info
        return self.base_offset if last is None else max(self.base_offset, last.next_offset)

    def offset_for_timestamp(self, timestamp: int, start_offset: int | None = None) -> int | None:
        """The first offset ≥ `start_offset` whose record timestamp is ≥ `timestamp` (None if none here)."""
        floor = self.base_offset if start_offset is None else start_offset
        _, ts_offset = self.time_index().lookup(timestamp)
        _, position = self.offset_index().lookup(max(ts_offset, floor))
        info = self._seek_batch(position, lambda b: b.max_timestamp >= timestamp and b.last_offset >= floor)
        while info is not None:
            data = self.source.read(info.position, info.size)
            # Control records count: the broker answers with a marker's offset when it comes first.
            for record in iter_records(data, start_offset=floor, include_control=True, verify_crc=False):
                if record.timestamp >= timestamp:
                    return record.offset
            nxt = info.position + info.size
            info = self._seek_batch(nxt, lambda b: b.max_timestamp >= timestamp and b.last_offset >= floor)
        return None


class _closing:
    def __init__(self, source: Source) -> None:
        self.source = source

    def __enter__(self) -> Source:
        return self.source

    def __exit__(self, *exc: object) -> None:
        self.source.close()


_FIRST_INDEX_READ = 96 << 10  # bytes of an index read first (whole slots of either kind); each further read doubles


def _index_start(f: Source, slots: Callable[[bytes], np.ndarray]) -> bytes:
    """The start of the index `f`, read in growing pieces until one holds a slot past the entries."""
    data = b""
    piece = _FIRST_INDEX_READ
    while len(data) < f.size:
        data += f.read(len(data), min(piece, f.size - len(data)))
        if ends_entries(slots(data)["relative_offset"]):
            break
        piece *= 2
    return data


__all__ = ["Segment"]

"""Reading a byte range of a `.log` in chunks of whole batches, with Kafka's end-of-data rules.

- A partial batch (or fewer than 17 bytes) at the end is where the data ends, never an error: a
  live broker may be mid-append, or a crash cut the write.
- A header of zeros followed by zeros to the end of the chunk is a preallocated tail: the end too.
- Anything else that breaks the framing or fails a check raises `SegmentCorruptError` naming the
  file, byte position and offset, or with `skip_corrupt` is counted in `ScanStats` and skipped.
  A batch whose length field is itself garbage cannot be stepped over, so the rest of the range
  is skipped.

Memory stays bounded: a chunk is at most `chunk_bytes`, or one batch that the file really holds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_spark.errors import CorruptRecordError, DataLossError, DecodeError
from kafka_spark.records import batch_v2
from kafka_spark.records.constants import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_V2
from kafka_spark.records.iterate import verify_batch
from kafka_spark.records.model import BatchInfo
from kafka_spark.records.scan import entry_offset, read_entry, scan
from kafka_spark.segments.errors import SegmentCorruptError
from kafka_spark.segments.storage import Source

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 8 << 20


@dataclass(slots=True)
class ScanStats:
    """What reading segments did: batches and bytes read, and what was skipped.

    `trailing_bytes` are bytes after the last complete batch (a partial batch or a zero tail);
    `corrupt_batches`, `skipped_bytes` and `skipped_offsets` count what `skip_corrupt` stepped over.
    """

    batches: int = 0
    bytes_read: int = 0
    records: int = 0
    trailing_bytes: int = 0
    corrupt_batches: int = 0
    skipped_bytes: int = 0
    skipped_offsets: int = 0

    def add(self, other: ScanStats) -> None:
        """Add another read's counts to these."""
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True, slots=True)
class Chunk:
    """Contiguous whole batches read from a file: `data` starts at byte `position` of the file.

    The `batches` positions are relative to `data`.
    """

    data: bytes
    position: int
    batches: list[BatchInfo]

    @property
    def first_offset(self) -> int:
        first = self.batches[0]
        return first.base_offset if first.base_offset is not None else first.last_offset

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset

    def span(self, first: int = 0, last: int | None = None) -> memoryview:
        """The bytes of batches [first, last] (all by default), for the decoder."""
        b = self.batches[-1 if last is None else last]
        return memoryview(self.data)[self.batches[first].position : b.position + b.size]


class _Cursor:
    """Corruption accounting of one scan (what to raise, what to count)."""

    def __init__(self, path: str, base_offset: int, skip: bool, stats: ScanStats) -> None:
        self.path = path
        self.skip = skip
        self.stats = stats
        self.next_offset = base_offset  # the offset after the last good batch
        self.skipping = False

    def corrupt(self, position: int, nbytes: int, offset: int | None, reason: str) -> None:
        if not self.skip:
            raise SegmentCorruptError(self.path, position, offset, reason)
        log.warning("skipping %d corrupt bytes of %s at byte %d (offset %s): %s", nbytes, self.path, position,
                    offset, reason)
        self.stats.corrupt_batches += 1
        self.stats.skipped_bytes += nbytes
        self.skipping = True

    def check_order(self, info: BatchInfo) -> None:
        # Offsets only grow in a log; the offset field is outside every CRC, so this is its check.
        first = info.base_offset if info.base_offset is not None else info.last_offset
        if first < self.next_offset or info.last_offset < first:
            raise CorruptRecordError(
                f"offsets {first}..{info.last_offset} do not follow offset {self.next_offset - 1}", first
            )

    def good(self, info: BatchInfo) -> None:
        if self.skipping:
            first = info.base_offset if info.base_offset is not None else info.last_offset
            self.stats.skipped_offsets += max(0, first - self.next_offset)
            self.skipping = False
        self.next_offset = max(self.next_offset, info.last_offset + 1)

    def finish(self, next_offset_hint: int | None) -> None:
        if self.skipping and next_offset_hint is not None:
            self.stats.skipped_offsets += max(0, next_offset_hint - self.next_offset)


def _check(buf: memoryview, info: BatchInfo, verify_crc: bool) -> None:
    if info.magic == MAGIC_V2:
        batch_v2.check_header(info)
    if verify_crc:
        verify_batch(buf, info)


def _zero_tail(raw: bytes, at: int) -> bool:
    return not raw[at:].strip(b"\x00")


def scan_chunks(
    source: Source,
    base_offset: int,
    start: int = 0,
    end: int | None = None,
    *,
    verify_crc: bool = False,
    skip_corrupt: bool = False,
    stats: ScanStats | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    next_offset_hint: int | None = None,
    zero_tail_is_end: bool = True,
) -> Iterator[Chunk]:
    """Yield the whole batches of `source` bytes [start, end) in chunks.

    `base_offset` (the segment's) and `next_offset_hint` (the next segment's base) let skipped
    offsets be counted when corruption reaches the first or last batch. Without
    `zero_tail_is_end`, zeros where a batch should start are corruption, as Kafka's tools see it.
    """
    stats = stats if stats is not None else ScanStats()
    cursor = _Cursor(source.path, base_offset, skip_corrupt, stats)
    stop = source.size if end is None else min(end, source.size)
    pos = start
    want = chunk_bytes
    while stop - pos >= HEADER_SIZE_UP_TO_MAGIC:
        try:
            raw = source.read(pos, min(want, stop - pos))
        except (EOFError, FileNotFoundError) as exc:
            raise DataLossError(f"{source.path} shrank or vanished while being read: {exc}") from None
        stats.bytes_read += len(raw)
        buf = memoryview(raw)
        bad_at = None
        try:
            found = scan(buf)
        except CorruptRecordError as exc:
            bad_at = exc.position if exc.position is not None else 0
            found = scan(buf[:bad_at])
        good: list[BatchInfo] = []
        for s, e in zip(found.starts, found.ends, strict=True):
            try:
                info = read_entry(buf, s, e)
                _check(buf, info, verify_crc)
                cursor.check_order(info)
            except DecodeError as exc:
                cursor.corrupt(pos + s, e - s, entry_offset(buf, s), str(exc))
                # A chunk holds contiguous batches only, so the skipped one splits it.
                if good:
                    stats.batches += len(good)
                    yield Chunk(raw, pos, good)
                    good = []
                continue
            cursor.good(info)
            good.append(info)
        if good:
            stats.batches += len(good)
            yield Chunk(raw, pos, good)
        if bad_at is not None:
            if zero_tail_is_end and _zero_tail(raw, bad_at):
                stats.trailing_bytes += stop - (pos + bad_at)
            else:
                size = int.from_bytes(buf[bad_at + 8 : bad_at + 12], "big", signed=True)
                cursor.corrupt(pos + bad_at, stop - (pos + bad_at), entry_offset(buf, bad_at),
                               f"batch size {size} is below the 14-byte minimum")
            pos = stop
            break
        if found.starts:
            pos += found.end
            want = chunk_bytes
            continue
        # Not even one whole batch in this chunk: read exactly that batch if the file holds it all.
        total = LOG_OVERHEAD + int.from_bytes(buf[8:12], "big", signed=True)
        if pos + total > stop:
            break
        want = total
    stats.trailing_bytes += max(0, stop - pos)
    cursor.finish(next_offset_hint)


__all__ = ["DEFAULT_CHUNK_BYTES", "Chunk", "ScanStats", "scan_chunks"]

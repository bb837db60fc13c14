"""Find the entries (v2 batches, v0/v1 messages) in a buffer and read their headers.

The same bytes live in fetch responses and segment files; both may end with a partial entry,
which is reported as `incomplete_at` (its byte position), never as corruption.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka_spark.errors import CorruptRecordError, UnsupportedFormatError
from kafka_spark.records.constants import (
    COMPRESSION_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_OVERHEAD_V0,
    LEGACY_OVERHEAD_V1,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V2,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    V2_HEADER,
    V2_MIN_SIZE,
    TimestampType,
)
from kafka_spark.records.model import BatchInfo, wrap64

Buffer = bytes | bytearray | memoryview

_SIZE = struct.Struct(">i")
_OFFSET = struct.Struct(">q")
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")


@dataclass(frozen=True, slots=True)
class Scan:
    """Entry boundaries of a buffer: `starts[i]`..`ends[i]`; `end` is where complete entries stop."""

    starts: list[int]
    ends: list[int]
    end: int
    incomplete_at: int | None


def entry_offset(buf: Buffer, pos: int) -> int:
    """The offset field of the entry at `pos` (for error messages)."""
    return _OFFSET.unpack_from(buf, pos)[0]


def scan(buf: Buffer, max_entry_size: int | None = None) -> Scan:
    """Split `buf` into complete entries, stopping at a trailing partial one.

    A size field below the smallest legal entry is corruption; with `max_entry_size`, so is one
    above it (without a cap, an absurd size reads as a partial entry, as in Kafka's own reader).
    """
    n = len(buf)
    unpack = _SIZE.unpack_from
    starts: list[int] = []
    append = starts.append
    pos = 0
    while n - pos >= HEADER_SIZE_UP_TO_MAGIC:
        size = unpack(buf, pos + 8)[0]
        if size < LEGACY_OVERHEAD_V0 or (max_entry_size is not None and size > max_entry_size):
            raise CorruptRecordError(
                f"record size {size} at byte {pos} is outside the legal range", entry_offset(buf, pos), pos
            )
        end = pos + LOG_OVERHEAD + size
        if end > n:
            break
        append(pos)
        pos = end
    ends = starts[1:]
    if starts:
        ends.append(pos)
    return Scan(starts, ends, pos, pos if pos < n else None)


def read_entry(buf: Buffer, start: int, end: int) -> BatchInfo:
    """Parse the header of the entry at `start` (v2 batch header or v0/v1 message header)."""
    magic = buf[start + 16]
    if magic >= 0x80:
        magic -= 0x100
    if magic == MAGIC_V2:
        return _read_v2(buf, start, end)
    if magic in (0, 1):
        return _read_legacy(buf, start, end, magic)
    raise UnsupportedFormatError(f"unknown magic byte {magic} at byte {start} (offset {entry_offset(buf, start)})")


def _read_v2(buf: Buffer, start: int, end: int) -> BatchInfo:
    size = end - start
    if size - LOG_OVERHEAD < V2_MIN_SIZE:
        raise CorruptRecordError(
            f"record batch at byte {start} is {size} bytes, smaller than the 61-byte batch header",
            entry_offset(buf, start),
        )
    (base, _, epoch, _, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count) = (
        V2_HEADER.unpack_from(buf, start)
    )
    return BatchInfo(
        position=start,
        size=size,
        magic=MAGIC_V2,
        base_offset=base,
        last_offset=wrap64(base + last_delta),
        count=count,
        crc=crc,
        attributes=attrs,
        compression=attrs & COMPRESSION_MASK,
        timestamp_type=(attrs & TIMESTAMP_TYPE_MASK) >> 3,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=pid,
        producer_epoch=pepoch,
        base_sequence=base_seq,
        partition_leader_epoch=epoch,
    )


def _read_legacy(buf: Buffer, start: int, end: int, magic: int) -> BatchInfo:
    size = end - start
    overhead = LEGACY_OVERHEAD_V0 if magic == MAGIC_V0 else LEGACY_OVERHEAD_V1
    if size - LOG_OVERHEAD < overhead:
        raise CorruptRecordError(
            f"message at byte {start} is {size} bytes, smaller than the v{magic} message header",
            entry_offset(buf, start),
        )
    if magic == MAGIC_V0:
        offset, _, crc, _, attrs = _LEGACY_V0.unpack_from(buf, start)
        timestamp = NO_TIMESTAMP
        ts_type = TimestampType.NO_TIMESTAMP_TYPE
    else:
        offset, _, crc, _, attrs, timestamp = _LEGACY_V1.unpack_from(buf, start)
        ts_type = (attrs & TIMESTAMP_TYPE_MASK) >> 3
    attrs &= 0xFF
    codec = attrs & COMPRESSION_MASK
    return BatchInfo(
        position=start,
        size=size,
        magic=magic,
        base_offset=None if codec else offset,
        last_offset=offset,
        count=None if codec else 1,
        crc=crc,
        attributes=attrs,
        compression=codec,
        timestamp_type=int(ts_type),
        base_timestamp=timestamp,
        max_timestamp=timestamp,
    )

"""Magic v0/v1 message sets: CRC, compressed wrapper messages (recursively) and their offsets.

A compressed message's value is a nested message set. With magic v1 the inner offsets are
relative and the wrapper carries the absolute offset of the last inner message; with a
LogAppendTime wrapper, every inner message takes the wrapper's timestamp.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_spark.errors import CorruptRecordError, DecodeError
from kafka_spark.records.arena import Arena
from kafka_spark.records.compression import decompress_into
from kafka_spark.records.constants import (
    COMPRESSION_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_OVERHEAD_V0,
    LEGACY_OVERHEAD_V1,
    LOG_OVERHEAD,
    MAGIC_V0,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TimestampType,
)
from kafka_spark.records.crc import crc32
from kafka_spark.records.model import BatchInfo, Record, wrap64

Buffer = bytes | bytearray | memoryview

MAX_NESTING = 4
"""Wrappers inside wrappers deeper than this are treated as corrupt (Kafka itself writes one level)."""

_ENTRY = struct.Struct(">qiIbb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class Leaf:
    """An uncompressed message that yields one record, with what its wrappers impose on it.

    `in_arena` tells which buffer holds it; `offset_shift` turns its stored offset into the
    absolute one (v1 relative offsets). A v1 wrapper imposes its timestamp type on its inner
    messages (`timestamp_type`), and with LogAppendTime its timestamp too (`timestamp`);
    None means the message's own.
    """

    in_arena: bool
    start: int
    end: int
    offset_shift: int
    timestamp: int | None
    timestamp_type: int | None
    magic: int


def leaves(
    buf: Buffer, info: BatchInfo, arena: Arena, limit: int, verify: bool, copy_plain: bool = False
) -> list[Leaf]:
    """The record-bearing messages of top-level message `info`, decompressing wrappers into `arena`.

    With `copy_plain`, an uncompressed top-level message is copied into the arena too, so that all
    leaves of a decode share one buffer.
    """
    if verify:
        verify_crc(buf, info.position, info.position + info.size, info.last_offset)
    if info.compression == 0:
        if copy_plain:
            start = arena.append(memoryview(buf)[info.position : info.position + info.size])
            return [Leaf(True, start, start + info.size, 0, None, None, info.magic)]
        return [Leaf(False, info.position, info.position + info.size, 0, None, None, info.magic)]
    out: list[Leaf] = []
    append_time = info.max_timestamp if info.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    _expand(buf, info.position, info.position + info.size, info.magic, info.last_offset,
            (append_time, info.timestamp_type), arena, limit, verify, 1, out)
    return out


def _expand(
    buf: Buffer,
    start: int,
    end: int,
    magic: int,
    wrapper_offset: int,
    timing: tuple[int | None, int],
    arena: Arena,
    limit: int,
    verify: bool,
    depth: int,
    out: list[Leaf],
) -> None:
    if depth > MAX_NESTING:
        raise CorruptRecordError(f"compressed messages nested deeper than {MAX_NESTING} levels", wrapper_offset)
    attrs = buf[start + 17]
    value_start, value_end = _value_span(buf, start, end, magic, wrapper_offset)
    if value_start < 0:
        raise CorruptRecordError(f"compressed message at offset {wrapper_offset} has a null value", wrapper_offset)
    try:
        at, length = decompress_into(
            attrs & COMPRESSION_MASK, memoryview(buf)[value_start:value_end], arena, limit - arena.size, magic=magic
        )
    except DecodeError as exc:
        raise CorruptRecordError(f"compressed message at offset {wrapper_offset}: {exc}", wrapper_offset) from None
    inner = arena.used()
    entries = _inner_entries(inner, at, at + length, wrapper_offset)
    if not entries:
        raise CorruptRecordError(f"compressed message at offset {wrapper_offset} holds no messages", wrapper_offset)
    # v1: inner offsets are relative; the wrapper's offset is the absolute offset of the last one.
    shift = 0
    if magic > MAGIC_V0:
        shift = wrapper_offset - entries[-1][2]
        if shift < 0:
            raise CorruptRecordError(
                f"wrapper offset {wrapper_offset} is below its last inner offset {entries[-1][2]}", wrapper_offset
            )
    for inner_start, inner_end, inner_offset in entries:
        if inner[inner_start + 16] != magic:
            raise CorruptRecordError(
                f"message in the compressed set at offset {wrapper_offset} has magic {inner[inner_start + 16]}, "
                f"its wrapper {magic}",
                wrapper_offset,
            )
        if verify:
            verify_crc(inner, inner_start, inner_end, wrap64(inner_offset + shift))
        if inner[inner_start + 17] & COMPRESSION_MASK:
            # Kafka never nests, but the format allows it; the inner wrapper's absolute offset
            # anchors its own children.
            _expand(inner, inner_start, inner_end, magic, wrap64(inner_offset + shift), timing,
                    arena, limit, verify, depth + 1, out)
            inner = arena.used()
        else:
            out.append(Leaf(True, inner_start, inner_end, shift, timing[0], timing[1], magic))


def _inner_entries(inner: Buffer, start: int, end: int, wrapper_offset: int) -> list[tuple[int, int, int]]:
    entries = []
    pos = start
    while pos < end:
        if end - pos < HEADER_SIZE_UP_TO_MAGIC:
            raise CorruptRecordError(f"truncated message inside the compressed set at offset {wrapper_offset}",
                                     wrapper_offset)
        offset, size = _INT64.unpack_from(inner, pos)[0], _INT32.unpack_from(inner, pos + 8)[0]
        nxt = pos + LOG_OVERHEAD + size
        if size < LEGACY_OVERHEAD_V0 or nxt > end:
            raise CorruptRecordError(
                f"invalid message size {size} inside the compressed set at offset {wrapper_offset}", wrapper_offset
            )
        entries.append((pos, nxt, offset))
        pos = nxt
    return entries


def verify_crc(buf: Buffer, start: int, end: int, offset: int) -> None:
    """Raise CorruptRecordError unless the message's CRC-32 matches its bytes."""
    stored = _ENTRY.unpack_from(buf, start)[2]
    actual = crc32(memoryview(buf)[start + 16 : end])
    if stored != actual:
        raise CorruptRecordError(
            f"message at offset {offset} is corrupt: stored CRC {stored} != computed {actual}", offset
        )


def _value_span(buf: Buffer, start: int, end: int, magic: int, offset: int) -> tuple[int, int]:
    """(start, end) of the value, (-1, -1) for a null value; checks that key and value fill the message."""
    overhead = LEGACY_OVERHEAD_V0 if magic == MAGIC_V0 else LEGACY_OVERHEAD_V1
    if end - start - LOG_OVERHEAD < overhead:
        raise CorruptRecordError(f"message at offset {offset} is shorter than its header", offset)
    key_at = start + (18 if magic == MAGIC_V0 else 26)
    key_len = _INT32.unpack_from(buf, key_at)[0]
    value_at = key_at + 4 + max(key_len, 0)
    if value_at + 4 > end:
        raise CorruptRecordError(f"message at offset {offset}: key of {key_len} bytes overruns the message", offset)
    value_len = _INT32.unpack_from(buf, value_at)[0]
    value_end = value_at + 4 + max(value_len, 0)
    if value_end != end:
        raise CorruptRecordError(
            f"message at offset {offset}: key and value take {value_end - start - LOG_OVERHEAD} of "
            f"{end - start - LOG_OVERHEAD} bytes",
            offset,
        )
    return (value_at + 4, value_end) if value_len >= 0 else (-1, -1)


def leaf_record(buf: Buffer, leaf: Leaf, info: BatchInfo) -> Record:
    """Decode one leaf message into a Record."""
    start, end, magic = leaf.start, leaf.end, leaf.magic
    offset = wrap64(_INT64.unpack_from(buf, start)[0] + leaf.offset_shift)
    attrs = int(buf[start + 17])
    if magic == MAGIC_V0:
        timestamp, ts_type = NO_TIMESTAMP, int(TimestampType.NO_TIMESTAMP_TYPE)
    else:
        timestamp = _INT64.unpack_from(buf, start + 18)[0] if leaf.timestamp is None else leaf.timestamp
        ts_type = (attrs & TIMESTAMP_TYPE_MASK) >> 3 if leaf.timestamp_type is None else leaf.timestamp_type
    key_at = start + (18 if magic == MAGIC_V0 else 26)
    _value_span(buf, start, end, magic, offset)
    key_len = _INT32.unpack_from(buf, key_at)[0]
    key = bytes(buf[key_at + 4 : key_at + 4 + key_len]) if key_len >= 0 else None
    value_at = key_at + 4 + max(key_len, 0)
    value_len = _INT32.unpack_from(buf, value_at)[0]
    value = bytes(buf[value_at + 4 : value_at + 4 + value_len]) if value_len >= 0 else None
    return Record(offset, timestamp, ts_type, key, value, (), info)


def iter_legacy_records(buf: Buffer, info: BatchInfo, arena: Arena, limit: int, verify: bool) -> Iterator[Record]:
    """Records of top-level message `info` (one, or the contents of a compressed wrapper)."""
    found = leaves(buf, info, arena, limit, verify)
    inner = arena.used()
    for leaf in found:
        yield leaf_record(inner if leaf.in_arena else buf, leaf, info)

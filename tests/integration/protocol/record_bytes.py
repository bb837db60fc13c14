"""Hand-assembled record data for Produce requests, and a walker over the batch headers of fetched data.

Only the fixed-position fields are touched: the full record decoder is another module's job, and
these tests must not lean on it. Layouts (all big-endian):

- message v0/v1: offset int64, size int32, crc uint32, magic int8, attributes int8,
  [timestamp int64 (v1)], key bytes, value bytes; the CRC32 covers magic..end.
- record batch v2: base offset int64, length int32, leader epoch int32, magic int8, crc uint32,
  attributes int16, last offset delta int32, first/max timestamp int64, producer id int64,
  producer epoch int16, base sequence int32, record count int32, records; the CRC32C covers
  attributes..end.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import crc32c

MAGIC_OFFSET = 16


@dataclass(frozen=True)
class BatchHeader:
    """The fixed-position fields of one record batch (magic 2) or one message (magic 0/1)."""

    base_offset: int
    size: int
    magic: int
    compression: int
    records: int
    crc_ok: bool


def batch_headers(data: Any) -> list[BatchHeader]:
    """Walk the complete batches of a `records` field by their length fields alone."""
    view = memoryview(data).cast("B")
    out: list[BatchHeader] = []
    pos = 0
    while pos + MAGIC_OFFSET + 1 <= len(view):
        base_offset, length = struct.unpack_from(">qi", view, pos)
        end = pos + 12 + length
        if end > len(view):
            break  # a partial batch at the end of a fetch is normal
        magic = view[pos + MAGIC_OFFSET]
        if magic == 2:
            crc, attributes = struct.unpack_from(">Ih", view, pos + 17)
            records = struct.unpack_from(">i", view, pos + 57)[0]
            crc_ok = crc32c.crc32c(view[pos + 21:end]) == crc
        else:
            crc, attributes = struct.unpack_from(">I", view, pos + 12)[0], view[pos + 17]
            # an uncompressed message is one record; compressed wrappers are not produced here
            records = 1
            crc_ok = zlib.crc32(view[pos + 16:end]) == crc
        out.append(BatchHeader(base_offset, length, magic, attributes & 0x07, records, crc_ok))
        pos = end
    return out


def _legacy_bytes(value: bytes | None) -> bytes:
    return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value


def message(magic: int, key: bytes | None, value: bytes | None, timestamp_ms: int) -> bytes:
    """One uncompressed message of magic 0 or 1 at relative offset 0."""
    body = struct.pack(">bb", magic, 0)
    if magic == 1:
        body += struct.pack(">q", timestamp_ms)
    body += _legacy_bytes(key) + _legacy_bytes(value)
    framed = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(framed)) + framed


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _varbytes(value: bytes | None) -> bytes:
    return _varint(-1) if value is None else _varint(len(value)) + value


def record_batch(key: bytes | None, value: bytes | None, timestamp_ms: int) -> bytes:
    """A magic 2 batch holding one uncompressed record without headers, not idempotent."""
    record = b"\x00" + _varint(0) + _varint(0) + _varbytes(key) + _varbytes(value) + _varint(0)
    record = _varint(len(record)) + record
    # attributes .. end: what the CRC32C covers
    tail = struct.pack(">hiqqqhii", 0, 0, timestamp_ms, timestamp_ms, -1, -1, -1, 1) + record
    crc = crc32c.crc32c(tail)
    after_length = struct.pack(">ibI", -1, 2, crc) + tail
    return struct.pack(">qi", 0, len(after_length)) + after_length

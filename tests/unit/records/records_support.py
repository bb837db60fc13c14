"""Helpers shared by the record tests: comparable rows from Arrow and from Record objects."""

from __future__ import annotations

import struct
from collections.abc import Iterable

import pyarrow as pa

from kafka_spark.records import Record
from kafka_spark.records.crc import crc32, crc32c

Row = tuple


def arrow_rows(batch: pa.RecordBatch) -> list[Row]:
    """(offset, timestamp µs | None, timestampType, key, value, headers | None) per row."""
    # Timestamps as integers: valid microseconds may still lie outside Python's datetime range.
    micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
    cols = batch.drop_columns(["timestamp"]).to_pydict()
    headers = cols.get("headers", [None] * batch.num_rows)
    return [
        (off, us, tt, k, v, None if h is None else tuple((x["key"], x["value"]) for x in h))
        for off, us, tt, k, v, h in zip(
            cols["offset"], micros, cols["timestampType"], cols["key"], cols["value"], headers, strict=True
        )
    ]


def record_rows(records: Iterable[Record], headers: bool = True) -> list[Row]:
    """The same tuple shape from Record objects (timestamps converted to microseconds)."""
    out = []
    for r in records:
        us = r.timestamp * 1000 if abs(r.timestamp) <= (1 << 63) // 1000 else None
        h = (tuple(r.headers) or None) if headers else None
        out.append((r.offset, us, r.timestamp_type, r.key, r.value, h))
    return out


def strip_headers(rows: list[Row]) -> list[Row]:
    return [(*row[:5], None) for row in rows]


def fix_crcs(data: bytes | bytearray, start: int = 0) -> bytes:
    """Recompute the CRC of every framed entry from byte `start`, so mutations reach the record parsers."""
    buf = bytearray(data)
    pos = start
    while pos + 17 <= len(buf):
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + size
        if size < 14 or end > len(buf):
            break
        if buf[pos + 16] == 2 and size >= 49:
            struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : end])))
        elif buf[pos + 16] in (0, 1):
            struct.pack_into(">I", buf, pos + 12, crc32(bytes(buf[pos + 16 : end])))
        pos = end
    return bytes(buf)

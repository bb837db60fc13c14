"""Decode the records of many v2 batches into `Columns`, 32k records per numpy step.

Python only finds record starts (`walk`); every other field is read with vectorised varint
reads. Each record must end exactly where the next begins (the last at its batch's end), with
its fields filling it exactly: those two checks, not the walk, make the positions trustworthy,
so keys and values can be copied out of the source without further checks. Anything that fails
raises `RecordsCorrupt`, and the caller re-reads the batches record by record for a precise error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_spark.errors import DecodeError
from kafka_spark.records import varints
from kafka_spark.records.batch_v2 import varint32
from kafka_spark.records.columns import Columns, Headers
from kafka_spark.records.constants import TimestampType
from kafka_spark.records.walk import WalkError, record_starts

CHUNK = 32768
SCALAR_HEADER_LANES = 16
"""Records still reading headers below this count finish one by one (hostile header counts)."""


class RecordsCorrupt(Exception):
    """Some record in the decoded batches is malformed."""


@dataclass(slots=True)
class BatchArrays:
    """Per-batch inputs: records section [start, end) in the source, and header fields."""

    start: np.ndarray
    end: np.ndarray
    count: np.ndarray
    base_offset: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    timestamp_type: np.ndarray


def decode(u8: np.ndarray, batches: BatchArrays, want_headers: bool) -> Columns:
    """Columns for every record of `batches`, whose bytes are in `u8`."""
    try:
        return _decode(u8, batches, want_headers)
    except (WalkError, varints.VarintError, IndexError) as exc:
        raise RecordsCorrupt(str(exc)) from None


def _decode(u8: np.ndarray, b: BatchArrays, want_headers: bool) -> Columns:
    counts = b.count
    starts = record_starts(u8, b.start, b.end, counts)
    n = len(starts)
    # Where each record must end: the next record's start, or its batch's end for the last one.
    must_end = np.empty(n, dtype=np.int64)
    must_end[:-1] = starts[1:]
    nonempty = counts > 0
    must_end[np.cumsum(counts)[nonempty] - 1] = b.end[nonempty]

    key_pos = np.empty(n, dtype=np.int64)
    key_len = np.empty(n, dtype=np.int64)
    value_pos = np.empty(n, dtype=np.int64)
    value_len = np.empty(n, dtype=np.int64)
    ts_delta = np.empty(n, dtype=np.int64)
    off_delta = np.empty(n, dtype=np.int64)
    header_count = np.empty(n, dtype=np.int64)
    header_pos = np.empty(n, dtype=np.int64)
    read = varints.read
    for a in range(0, n, CHUNK):
        z = slice(a, a + CHUNK)
        length, pos = read(u8, starts[z])
        if not np.array_equal(pos + length, must_end[z]):
            raise RecordsCorrupt("record lengths do not chain")
        pos += 1  # attributes
        ts_delta[z], pos = read(u8, pos, long=True)
        off_delta[z], pos = read(u8, pos)
        key_len[z], pos = read(u8, pos)
        key_pos[z] = pos
        pos += np.maximum(key_len[z], 0)
        value_len[z], pos = read(u8, pos)
        value_pos[z] = pos
        pos += np.maximum(value_len[z], 0)
        header_count[z], header_pos[z] = varints.read_last(u8, pos)

    headers = None
    with_headers = header_count != 0
    if with_headers.any():
        headers = _headers(u8, header_count, header_pos, must_end, want_headers)
    elif not np.array_equal(header_pos, must_end):
        raise RecordsCorrupt("record fields do not fill the record")

    batch_of = np.repeat(np.arange(len(counts)), counts)
    offset = b.base_offset[batch_of] + off_delta
    timestamp = b.base_timestamp[batch_of] + ts_delta
    log_append = b.timestamp_type == TimestampType.LOG_APPEND_TIME
    if log_append.any():
        timestamp = np.where(log_append[batch_of], b.max_timestamp[batch_of], timestamp)
    ts_type = b.timestamp_type.astype(np.int32)[batch_of]
    return Columns(key_pos, key_len, value_pos, value_len, offset, timestamp, ts_type,
                   headers if want_headers else None)


def _headers(
    u8: np.ndarray, count: np.ndarray, pos: np.ndarray, must_end: np.ndarray, want: bool
) -> Headers | None:
    rows = np.flatnonzero(count)
    lane_count = count[rows]
    # Every header takes at least two bytes: bounds what a hostile count can make us allocate.
    if (lane_count < 0).any() or (2 * lane_count > must_end[rows] - pos[rows]).any():
        raise RecordsCorrupt("invalid header count")
    if not np.array_equal(pos[count == 0], must_end[count == 0]):
        raise RecordsCorrupt("record fields do not fill the record")
    total = int(lane_count.sum())
    key_pos = np.empty(total, dtype=np.int64)
    key_len = np.empty(total, dtype=np.int64)
    value_pos = np.empty(total, dtype=np.int64)
    value_len = np.empty(total, dtype=np.int64)
    base = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(lane_count[:-1], out=base[1:])
    order = np.argsort(-lane_count, kind="stable")
    lane_count = lane_count[order]
    lane_base = base[order]
    lane_pos = pos[rows][order]
    active = np.searchsorted(-lane_count, -np.arange(1, int(lane_count[0]) + 1), side="right")
    out = (key_pos, key_len, value_pos, value_len)
    for j, n in enumerate(active.tolist()):
        if n < SCALAR_HEADER_LANES:
            for lane in range(n):
                lane_pos[lane] = _scalar_headers(u8, int(lane_pos[lane]), int(lane_count[lane]) - j,
                                                 int(lane_base[lane]) + j, out)
            break
        p = lane_pos[:n]
        at = lane_base[:n] + j
        klen, p2 = varints.read(u8, p)
        if (klen < 0).any():
            raise RecordsCorrupt("negative header key size")
        key_pos[at] = p2
        key_len[at] = klen
        vlen, p2 = varints.read(u8, p2 + klen, safe=True)
        value_pos[at] = p2
        value_len[at] = vlen
        p[:] = p2 + np.maximum(vlen, 0)
    ends = np.empty(len(rows), dtype=np.int64)
    ends[order] = lane_pos
    if not np.array_equal(ends, must_end[rows]):
        raise RecordsCorrupt("record headers do not fill the record")
    if not want:
        return None
    return Headers(count, key_pos, key_len, value_pos, value_len)


def _scalar_headers(u8: np.ndarray, p: int, todo: int, at: int, out: tuple[np.ndarray, ...]) -> int:
    key_pos, key_len, value_pos, value_len = out
    data = u8.data
    try:
        for i in range(todo):
            klen, p = varint32(data, p)
            if klen < 0:
                raise RecordsCorrupt("negative header key size")
            key_pos[at + i] = p
            key_len[at + i] = klen
            vlen, p = varint32(data, p + klen)
            value_pos[at + i] = p
            value_len[at + i] = vlen
            p += max(vlen, 0)
    except DecodeError as exc:
        raise RecordsCorrupt(str(exc)) from None
    return p

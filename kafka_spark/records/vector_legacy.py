"""Decode v0/v1 messages into `Columns`: fixed-layout headers read with numpy gathers.

Inputs are "leaf" messages (uncompressed ones, each one record) with the adjustments their
wrappers impose: an offset shift (v1 relative offsets) and an imposed timestamp/timestamp type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_spark.records.columns import Columns
from kafka_spark.records.constants import NO_TIMESTAMP, TimestampType
from kafka_spark.records.crc import crc32
from kafka_spark.records.legacy import Leaf

_NONE = np.iinfo(np.int64).min  # "no override" marker in the override arrays


class MessagesCorrupt(Exception):
    """Some message is malformed or fails its CRC."""


@dataclass(slots=True)
class LeafArrays:
    """Leaf messages [start, end) in the source, with their wrapper-imposed adjustments."""

    start: np.ndarray
    end: np.ndarray
    offset_shift: np.ndarray
    timestamp: np.ndarray
    timestamp_type: np.ndarray

    @classmethod
    def plain(cls, start: np.ndarray, end: np.ndarray) -> LeafArrays:
        """Top-level uncompressed messages: nothing imposed."""
        none = np.full(len(start), _NONE, dtype=np.int64)
        return cls(start, end, np.zeros(len(start), dtype=np.int64), none, none)

    @classmethod
    def of(cls, leaves: list[Leaf]) -> LeafArrays:
        rows = [
            (f.start, f.end, f.offset_shift, _NONE if f.timestamp is None else f.timestamp,
             _NONE if f.timestamp_type is None else f.timestamp_type)
            for f in leaves
        ]
        table = np.array(rows, dtype=np.int64).reshape(-1, 5)
        return cls(*(np.ascontiguousarray(table[:, i]) for i in range(5)))

    @classmethod
    def concat(cls, parts: list[LeafArrays]) -> LeafArrays:
        if len(parts) == 1:
            return parts[0]
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__slots__))


def _big_endian(u8: np.ndarray, pos: np.ndarray, width: int, dtype: str) -> np.ndarray:
    cells = u8[pos[:, None] + np.arange(width)]
    return np.ascontiguousarray(cells).view(dtype).reshape(-1).astype(np.int64)


def decode(u8: np.ndarray, leaves: LeafArrays, verify: bool) -> Columns:
    """Columns for the leaf messages, whose bytes are in `u8`."""
    try:
        return _decode(u8, leaves, verify)
    except IndexError:
        raise MessagesCorrupt("message fields run past the data") from None


def _decode(u8: np.ndarray, leaves: LeafArrays, verify: bool) -> Columns:
    start, end = leaves.start, leaves.end
    if verify:
        data = u8.data
        actual = np.array([crc32(data[s + 16 : e]) for s, e in zip(start.tolist(), end.tolist(), strict=True)],
                          dtype=np.int64)
        if not np.array_equal(actual, _big_endian(u8, start + 12, 4, ">u4")):
            raise MessagesCorrupt("CRC mismatch")
    magic = u8[start + 16].astype(np.int64)
    if ((magic != 0) & (magic != 1)).any():
        raise MessagesCorrupt("unexpected magic")
    v1 = magic == 1
    key_at = start + np.where(v1, 26, 18)
    if ((key_at + 8) > end).any():
        raise MessagesCorrupt("message shorter than its header")
    key_len = _big_endian(u8, key_at, 4, ">i4")
    key_pos = key_at + 4
    value_at = key_pos + np.maximum(key_len, 0)
    if (value_at + 4 > end).any():
        raise MessagesCorrupt("key overruns the message")
    value_len = _big_endian(u8, value_at, 4, ">i4")
    value_pos = value_at + 4
    if not np.array_equal(value_pos + np.maximum(value_len, 0), end):
        raise MessagesCorrupt("key and value do not fill the message")

    offset = _big_endian(u8, start, 8, ">i8") + leaves.offset_shift
    attrs = u8[start + 17].astype(np.int64)
    own_ts = np.where(v1, _big_endian(u8, start + 18, 8, ">i8") if v1.any() else 0, NO_TIMESTAMP)
    timestamp = np.where(leaves.timestamp != _NONE, leaves.timestamp, own_ts)
    ts_type = np.where(leaves.timestamp_type != _NONE, leaves.timestamp_type, (attrs >> 3) & 1)
    v0 = ~v1
    timestamp[v0] = NO_TIMESTAMP
    ts_type[v0] = TimestampType.NO_TIMESTAMP_TYPE
    return Columns(key_pos, key_len, value_pos, value_len, offset, timestamp, ts_type.astype(np.int32))


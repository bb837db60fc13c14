"""A fetched key or value column's records grouped by their Confluent framing, all records at once (numpy over the
Arrow buffers), for the column-wise decoders of every format (`columns._blocks`).

A group holds the rows whose framing is byte for byte the same: magic byte 0, one schema id and, for Protobuf, one
run of message indexes, so every payload of a group starts at the same byte. Records the grouping does not
understand exactly (null, short, another magic byte, a negative id, Protobuf indexes longer than a few one-byte
varints) are in no group: the per-record path decodes them, or names what is wrong with their framing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

_FRAMING = 5
# Protobuf message indexes taken here: a count and up to this many indexes, each a one-byte zigzag varint (every
# message of a schema with fewer than 64 messages per level, nested this deep).
_MAX_INDEXES = 4


class Group(NamedTuple):
    """What the framing of a group's records says, and where their payloads start."""

    schema_id: int
    indexes: tuple[int, ...]  # Protobuf's message indexes as `wire.split` gives them; () for other formats
    start: int  # the payload's first byte in every value of the group


def value_offsets(column: pa.Array) -> np.ndarray:
    """The n + 1 offsets of a binary column's values in its data buffer (int64)."""
    buffer = column.buffers()[1]
    return np.frombuffer(buffer, np.int32, len(column) + 1, column.offset * 4).astype(np.int64)


def framed_groups(column: pa.Array, protobuf: bool) -> dict[Group, np.ndarray]:
    """Group -> the rows (in order) of `column` (binary) framed that way; groups in the order of their first row."""
    n = len(column)
    data_buffer = column.buffers()[2]
    if n == 0 or data_buffer is None:
        return {}
    offsets = value_offsets(column)
    data = np.frombuffer(data_buffer, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    header = _FRAMING + 1 if protobuf else _FRAMING  # Protobuf's index count is at least one byte
    rows = np.flatnonzero((lengths >= header) & np.asarray(column.is_valid(), dtype=bool))
    head = data[starts[rows][:, None] + np.arange(header)].astype(np.int64)
    ids = (head[:, 1] << 24) | (head[:, 2] << 16) | (head[:, 3] << 8) | head[:, 4]
    keep = (head[:, 0] == 0) & (ids < 1 << 31)  # a set top bit is a negative id: a framing error per record
    count = np.zeros(len(rows), dtype=np.int64)
    packed = np.zeros(len(rows), dtype=np.int64)
    if protobuf:
        count, packed, fits = _indexes(data, starts[rows], lengths[rows], head[:, 5])
        keep &= fits
    rows, ids, count, packed = rows[keep], ids[keep], count[keep], packed[keep]
    if len(rows) == 0:
        return {}
    keys = (ids << 32) | (count << 28) | packed
    if keys[0] == keys[-1] and (keys == keys[0]).all():
        return {_group(int(keys[0]), protobuf): rows}
    unique, first = np.unique(keys, return_index=True)
    return {_group(int(k), protobuf): rows[keys == k] for k in unique[np.argsort(first)]}


def _indexes(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index count, the index bytes packed 7 bits each, whether the grouping takes the record) of each record.
    A count byte of 0 is Confluent's short form of [0] (count 0 here, the payload one byte after the id)."""
    count = first >> 1
    fits = (first < 0x80) & (first & 1 == 0) & (count <= _MAX_INDEXES) & (lengths >= _FRAMING + 1 + count)
    count = np.where(fits, count, 0)
    packed = np.zeros(len(starts), dtype=np.int64)
    for i in range(_MAX_INDEXES):
        has = fits & (count > i)
        if not has.any():
            break
        byte = np.zeros(len(starts), dtype=np.int64)
        byte[has] = data[starts[has] + _FRAMING + 1 + i]
        fits &= ~has | ((byte < 0x80) & (byte & 1 == 0))  # one-byte, non-negative zigzag varints only
        packed |= np.where(has, byte >> 1, 0) << (7 * i)
    return count, packed, fits


def _group(key: int, protobuf: bool) -> Group:
    schema_id, count, packed = key >> 32, (key >> 28) & 0xF, key & ((1 << 28) - 1)
    if not protobuf:
        return Group(schema_id, (), _FRAMING)
    if count == 0:
        return Group(schema_id, (0,), _FRAMING + 1)
    indexes = tuple((packed >> (7 * i)) & 0x7F for i in range(count))
    return Group(schema_id, indexes, _FRAMING + 1 + count)

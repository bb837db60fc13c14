"""A header-only walk over fetched record data: where the complete batches end and what comes next.

The fetcher uses it to send the next request before the current data is decoded. Both layouts
start with ``offset int64, length int32``; message sets v0/v1 carry the (last inner) offset there,
record batches v2 the base offset, with ``lastOffsetDelta`` at byte 23.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_HEAD = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_HEADER_SIZE = 12
_MAGIC_AT = 16
_V2_LAST_DELTA_AT = 23
_V2_MIN_SIZE = 61


class Scan(NamedTuple):
    """`next_offset`: after the last complete batch (None if none is complete); `complete_bytes`: their
    total size; `needed`: the full size of a batch cut off at the end (0 when nothing is cut off)."""

    next_offset: int | None
    complete_bytes: int
    needed: int
    batches: int


def scan(data: memoryview | bytes) -> Scan:
    """Walk batch headers of fetched `data` without decoding records."""
    view = memoryview(data)
    size = len(view)
    pos = 0
    next_offset: int | None = None
    batches = 0
    while pos + _HEADER_SIZE <= size:
        offset, length = _HEAD.unpack_from(view, pos)
        total = _HEADER_SIZE + length
        if length < 0:
            break
        if pos + total > size:
            return Scan(next_offset, pos, total, batches)
        magic = view[pos + _MAGIC_AT] if pos + _MAGIC_AT < size else 0
        if magic >= 2 and total >= _V2_MIN_SIZE:
            next_offset = offset + _LAST_DELTA.unpack_from(view, pos + _V2_LAST_DELTA_AT)[0] + 1
        else:
            next_offset = offset + 1
        pos += total
        batches += 1
    needed = _HEADER_SIZE if pos < size else 0
    return Scan(next_offset, pos, needed, batches)

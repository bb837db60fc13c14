"""Vectorised zigzag varint reading over a uint8 array, with Java's int32/int64 semantics.

Most varints in a record are one or two bytes, so a 64 Ki-entry table indexed by the two bytes at
a position gives value and size in one gather; longer ones take a per-byte loop over just those
positions. Reads past the end of the array raise IndexError, which callers treat as corruption.
"""

from __future__ import annotations

import numpy as np


class VarintError(Exception):
    """A varint that is too long (or a length that is negative) where the format forbids it."""


def _tables() -> tuple[np.ndarray, np.ndarray, list[int]]:
    word = np.arange(1 << 16, dtype=np.int64)
    b0 = word & 0xFF
    b1 = word >> 8
    one = b0 < 0x80
    two = ~one & (b1 < 0x80)
    raw = np.where(one, b0, (b0 & 0x7F) | (b1 << 7))
    size = np.where(one, 1, np.where(two, 2, 0))
    value = (raw >> 1) ^ -(raw & 1)
    # value << 3 | size; size 0 marks a varint of three bytes or more.
    packed = np.where(size > 0, (value << 3) | size, 0)
    # Record-length walk: bytes to the next record, 0 when the slow path must decide.
    advance = np.where((size > 0) & (value >= 0), size + value, 0)
    return packed.astype(np.int64), advance.astype(np.int64), advance.tolist()


PACKED, ADVANCE, ADVANCE_LIST = _tables()
ZIGZAG8 = ((np.arange(256) >> 1) ^ -(np.arange(256) & 1)).astype(np.int64)


def word_at(u8: np.ndarray, pos: np.ndarray, safe: bool = False) -> np.ndarray:
    """The little-endian 16-bit word at each position (the second byte clamped if `safe`)."""
    nxt = pos + 1
    if safe:
        np.minimum(nxt, len(u8) - 1, out=nxt)
    word = u8[nxt].astype(np.int32)
    word <<= 8
    word |= u8[pos]
    return word


def read(u8: np.ndarray, pos: np.ndarray, long: bool = False, safe: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Read one varint at each position; return (values as int64, positions after them)."""
    packed = PACKED[word_at(u8, pos, safe)]
    size = packed & 7
    value = packed >> 3
    if not size.all():
        slow = np.flatnonzero(size == 0)
        value[slow], size[slow] = read_slow(u8, pos[slow], long)
    return value, pos + size


def read_last(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like `read`, for a field that may be the buffer's last byte (only one byte is peeked)."""
    first = u8[pos]
    if first.max(initial=0) < 0x80:
        return ZIGZAG8[first], pos + 1
    return read(u8, pos, safe=True)


def read_slow(u8: np.ndarray, pos: np.ndarray, long: bool) -> tuple[np.ndarray, np.ndarray]:
    """Varints of any length (up to 5 bytes, or 10 if `long`); returns (values, sizes)."""
    max_bytes = 10 if long else 5
    raw = np.zeros(len(pos), dtype=np.uint64)
    size = np.zeros(len(pos), dtype=np.int64)
    todo = np.arange(len(pos))
    for i in range(max_bytes):
        byte = u8[pos[todo] + i].astype(np.uint64)
        raw[todo] |= (byte & np.uint64(0x7F)) << np.uint64(7 * i)
        done = byte < 0x80
        size[todo[done]] = i + 1
        todo = todo[~done]
        if not len(todo):
            break
    else:
        raise VarintError(f"varint longer than {max_bytes} bytes")
    if not long:
        raw &= np.uint64(0xFFFFFFFF)
    value = (raw >> np.uint64(1)) ^ (np.uint64(0) - (raw & np.uint64(1)))
    value = value.view(np.int64)
    if not long:
        # int32 zigzag decoded in 64 bits: sign-extend from bit 31.
        value = value.astype(np.int32).astype(np.int64)
    return value, size

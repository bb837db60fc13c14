"""Kafka's murmur2 over many keys at once with numpy, bit for bit equal to `partitioner.murmur2`.

Keys are sorted by their number of 4-byte blocks, longest first, so the keys that still have a block ``b``
are a prefix of that order: the loop over block positions touches each block once, whatever the mix of
lengths, and costs a few numpy calls per block position instead of Python work per key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kafka_spark.client.producer.partitioner import MURMUR_M, MURMUR_SEED

_U32 = np.uint32
_MUL = _U32(MURMUR_M)


def murmur2_many(keys: Sequence[bytes]) -> np.ndarray:
    """murmur2 of every key (none may be None) as signed 32-bit ints, in the keys' order."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return murmur2_buffers(np.frombuffer(b"".join(keys), dtype=np.uint8), offsets)


def murmur2_buffers(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """murmur2 of keys ``data[offsets[i]:offsets[i + 1]]`` (Arrow's binary layout) as signed 32-bit ints."""
    data = np.asarray(data, dtype=np.uint8)
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    lengths = np.asarray(offsets[1:], dtype=np.int64) - starts
    count = len(lengths)
    if count == 0:
        return np.empty(0, dtype=np.int32)
    blocks = lengths >> 2
    order = np.argsort(-blocks, kind="stable")
    starts, lengths, blocks = starts[order], lengths[order], blocks[order]
    # active[b]: how many keys (a prefix of `order`) have a block at position b
    active = np.searchsorted(-blocks, -np.arange(int(blocks[0])), side="left")
    h = (lengths.astype(_U32) ^ _U32(MURMUR_SEED)).astype(_U32)
    for b, n in enumerate(active.tolist()):
        k = _word(data, starts[:n] + 4 * b)
        k *= _MUL
        k ^= k >> _U32(24)
        k *= _MUL
        head = h[:n]
        head *= _MUL
        head ^= k
    _tail(h, data, starts + (blocks << 2), lengths & 3)
    h ^= h >> _U32(13)
    h *= _MUL
    h ^= h >> _U32(15)
    out = np.empty(count, dtype=np.int32)
    out[order] = h.view(np.int32)
    return out


def _word(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    # a little-endian uint32 at each (unaligned) byte position
    word = data[at].astype(_U32)
    word |= data[at + 1].astype(_U32) << _U32(8)
    word |= data[at + 2].astype(_U32) << _U32(16)
    word |= data[at + 3].astype(_U32) << _U32(24)
    return word


def _tail(h: np.ndarray, data: np.ndarray, at: np.ndarray, rest: np.ndarray) -> None:
    # the 1-3 bytes after the last block, mixed in as murmur2's switch does (in place on h)
    for shift, need in ((16, 3), (8, 2), (0, 1)):
        has = np.flatnonzero(rest >= need)
        if len(has):
            h[has] ^= data[at[has] + need - 1].astype(_U32) << _U32(shift)
    has = np.flatnonzero(rest >= 1)
    if len(has):
        h[has] *= _MUL

"""LZ4 frame-format details Kafka needs beyond the codec itself.

Kafka's Java producers wrote magic-v0 LZ4 frames whose header checksum (HC) was computed over the
4 magic bytes plus the frame descriptor instead of the descriptor alone (KAFKA-3160). The Java
reader ignores the HC for magic v0; LZ4 libraries verify it, so the decoder rewrites it first and
the encoder reproduces the broken form for v0. Walking the block headers also gives an upper bound
of the decompressed size, so output can be reserved before decompressing.
"""

from __future__ import annotations

from kafka_spark.errors import DecodeError

FRAME_MAGIC = b"\x04\x22\x4d\x18"
_MASK = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of `data` (only ever used on frame descriptors, a few bytes long)."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
        while i + 16 <= n:
            for k in range(4):
                lane = int.from_bytes(data[i : i + 4], "little")
                v[k] = (_rotl((v[k] + lane * _P2) & _MASK, 13) * _P1) & _MASK
                i += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i : i + 4], "little") * _P3) & _MASK, 17) * _P4) & _MASK
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _MASK, 11) * _P1) & _MASK
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _MASK
    h ^= h >> 13
    h = (h * _P3) & _MASK
    h ^= h >> 16
    return h


def _descriptor_end(frame: bytes | bytearray | memoryview) -> int:
    """Position of the HC byte (the end of the frame descriptor)."""
    if len(frame) < 7 or bytes(frame[:4]) != FRAME_MAGIC:
        raise DecodeError("lz4: not an LZ4 frame (bad magic)")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        raise DecodeError("lz4: frame descriptor is truncated")
    return end


def header_checksum(frame: bytes | bytearray | memoryview, broken: bool = False) -> int:
    """The HC byte a frame should carry; `broken` gives KAFKA-3160's variant (magic included)."""
    end = _descriptor_end(frame)
    return (xxh32(bytes(frame[0 if broken else 4 : end])) >> 8) & 0xFF


def with_header_checksum(frame: bytes | bytearray | memoryview, broken: bool) -> bytes | bytearray | memoryview:
    """`frame` with its HC byte set to the correct (or KAFKA-3160) value; unchanged if already so."""
    end = _descriptor_end(frame)
    want = header_checksum(frame, broken)
    if frame[end] == want:
        return frame
    out = bytearray(frame)
    out[end] = want
    return out


def frame_bound(frame: bytes | bytearray | memoryview) -> tuple[int, int]:
    """Walk one frame's blocks; return (upper bound of the decompressed size, frame length).

    Raises DecodeError when the frame is truncated, so a decompressor never sees a short frame.
    """
    end = _descriptor_end(frame)
    flg = frame[4]
    block_max = _BLOCK_MAX.get((frame[5] >> 4) & 0x07)
    if block_max is None:
        raise DecodeError("lz4: invalid block maximum size in the frame descriptor")
    content_size = int.from_bytes(frame[6:14], "little") if flg & 0x08 else -1
    block_checksum = 4 if flg & 0x10 else 0
    pos = end + 1
    n = len(frame)
    bound = 0
    while True:
        if pos + 4 > n:
            raise DecodeError("lz4: frame is truncated")
        word = int.from_bytes(frame[pos : pos + 4], "little")
        pos += 4
        if word == 0:
            break
        size = word & 0x7FFFFFFF
        if size > block_max:
            raise DecodeError(f"lz4: block of {size} bytes exceeds the frame's maximum of {block_max}")
        bound += size if word & 0x80000000 else block_max
        pos += size + block_checksum
    if flg & 0x04:
        pos += 4
    if pos > n:
        raise DecodeError("lz4: frame is truncated")
    if content_size >= 0:
        if content_size > bound:
            raise DecodeError("lz4: frame content size exceeds what its blocks can hold")
        bound = content_size
    return bound, pos

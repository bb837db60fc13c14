"""Variable-length integers: unsigned LEB128 varints and zigzag-encoded signed varints/varlongs."""

from __future__ import annotations

from kafka_spark.errors import DecodeError

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative int as an unsigned varint."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_uvarint(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = _MAX_VARLONG_BYTES
) -> tuple[int, int]:
    """Decode an unsigned varint at `pos`; return (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos + i >= end:
            raise DecodeError(f"varint at byte {pos} runs past the end of the buffer")
        b = buf[pos + i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos + i + 1
        shift += 7
    raise DecodeError(f"varint at byte {pos} is longer than {max_bytes} bytes")


def zigzag_encode(value: int) -> int:
    """Map a signed int to the unsigned zigzag form (0, -1, 1, -2 -> 0, 1, 2, 3)."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of `zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def encode_varint(value: int) -> bytes:
    """Encode a signed int32/int64 as a zigzag varint."""
    return encode_uvarint(zigzag_encode(value) & 0xFFFFFFFFFFFFFFFF)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zigzag int32 varint at `pos`; return (value, next position)."""
    raw, nxt = decode_uvarint(buf, pos, _MAX_VARINT_BYTES)
    return zigzag_decode(raw), nxt


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zigzag int64 varlong at `pos`; return (value, next position)."""
    raw, nxt = decode_uvarint(buf, pos, _MAX_VARLONG_BYTES)
    return zigzag_decode(raw), nxt

"""Confluent's wire framing of keys and values: magic byte 0, a 4-byte big-endian schema id, for Protobuf the
message indexes, then the payload. Bytes in, values out; no I/O."""

from __future__ import annotations

import struct

from kafka_spark.errors import PayloadError

_HEADER = struct.Struct(">bi")
_FIRST_MESSAGE = (0,)
# A zigzag varint of a 32-bit value takes at most 5 bytes; Confluent writes indexes and their count that way.
_MAX_VARINT_BYTES = 5


def split(data: bytes | memoryview, protobuf: bool) -> tuple[int, tuple[int, ...], memoryview]:
    """(schema id, message indexes, payload) of a framed key or value; the indexes are () unless `protobuf`.

    PayloadError names what is wrong with the framing.
    """
    size = len(data)
    if size < 5:
        if size == 0:
            raise PayloadError("empty payload: no Confluent framing (magic byte and schema id)")
        raise PayloadError(f"payload of {size} bytes is shorter than Confluent's 5-byte framing")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic:
        if magic == 1:
            raise PayloadError("magic byte 0x01 is Confluent's schema-GUID framing, which is not supported; "
                               "expected 0x00 and a 4-byte schema id")
        raise PayloadError(f"magic byte 0x{magic & 0xFF:02x} is not Confluent's framing (expected 0x00)")
    if schema_id < 0:
        raise PayloadError(f"negative schema id {schema_id} in the framing")
    view = data if isinstance(data, memoryview) else memoryview(data)
    if not protobuf:
        return schema_id, (), view[5:]
    if size == 5:
        raise PayloadError("Protobuf payload ends before its message indexes")
    if data[5] == 0:  # the common case [0], written as one byte
        return schema_id, _FIRST_MESSAGE, view[6:]
    indexes, pos = _indexes(data, 5, size)
    return schema_id, indexes, view[pos:]


def _indexes(data: bytes | memoryview, pos: int, size: int) -> tuple[tuple[int, ...], int]:
    count, pos = _varint(data, pos, size, "message index count")
    if count < 0:
        raise PayloadError(f"negative message index count {count}")
    if count == 0:
        return _FIRST_MESSAGE, pos
    # every index takes at least one byte: a count beyond the bytes left is a lie, refused before any work
    if count > size - pos:
        raise PayloadError(f"message index count {count} exceeds the {size - pos} bytes left in the payload")
    out = []
    for _ in range(count):
        index, pos = _varint(data, pos, size, "message index")
        if index < 0:
            raise PayloadError(f"negative message index {index}")
        out.append(index)
    return tuple(out), pos


def _varint(data: bytes | memoryview, pos: int, size: int, what: str) -> tuple[int, int]:
    value = shift = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= size:
            raise PayloadError(f"truncated {what}: the payload ends inside a varint")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value > 0xFFFFFFFF:
                raise PayloadError(f"malformed {what}: varint value beyond 32 bits")
            return (value >> 1) ^ -(value & 1), pos + i + 1
        shift += 7
    raise PayloadError(f"malformed {what}: varint longer than {_MAX_VARINT_BYTES} bytes")


def frame(schema_id: int, payload: bytes, indexes: tuple[int, ...] | None = None) -> bytes:
    """`payload` framed with `schema_id`; `indexes` are Protobuf's message indexes (None for other formats),
    `(0,)` written as the single byte 0x00 as Confluent's serializers write it."""
    if not 0 <= schema_id <= 0x7FFFFFFF:
        raise ValueError(f"schema id {schema_id} is outside 0..2147483647")
    head = _HEADER.pack(0, schema_id)
    if indexes is None:
        return head + payload
    if indexes == _FIRST_MESSAGE or not indexes:
        return head + b"\x00" + payload
    parts = bytearray(head)
    _put_varint(parts, len(indexes))
    for index in indexes:
        if not 0 <= index <= 0x7FFFFFFF:
            raise ValueError(f"message index {index} is outside 0..2147483647")
        _put_varint(parts, index)
    return bytes(parts) + payload


def _put_varint(out: bytearray, value: int) -> None:
    value = (value << 1) ^ (value >> 63)
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)

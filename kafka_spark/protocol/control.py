"""Decoding the values of KRaft's control records (leader changes, snapshot bounds, voters)."""

from __future__ import annotations

import struct
from functools import cache
from typing import Any

from kafka_spark.errors import DecodeError
from kafka_spark.protocol.compiler import Plan, compile_struct
from kafka_spark.protocol.schema import Field, Message
from kafka_spark.protocol.schemas.control_records import BY_TYPE


@cache
def _plan(type_id: int) -> Plan:
    message: Message = BY_TYPE[type_id][1]
    return compile_struct(message.fields, 0, True)


def is_kraft_control(type_id: int) -> bool:
    """True for the control types whose value `decode_kraft_control` reads."""
    return type_id in BY_TYPE


def decode_kraft_control(type_id: int, value: bytes) -> dict[str, Any]:
    """The value of a KRaft control record of `type_id`; DecodeError if it does not parse."""
    try:
        decoded, end = _plan(type_id).decode(memoryview(value), 0)
    except (struct.error, IndexError, ValueError, OverflowError, UnicodeDecodeError) as exc:
        raise DecodeError(f"{BY_TYPE[type_id][1].name}: {exc}") from exc
    if end != len(value):
        raise DecodeError(f"{BY_TYPE[type_id][1].name}: {len(value) - end} bytes left after the value")
    return decoded


def encode_kraft_control(type_id: int, value: dict[str, Any]) -> bytes:
    """The value bytes of a KRaft control record of `type_id`."""
    out = bytearray()
    _plan(type_id).encode(out, value)
    return bytes(out)


def kraft_control_fields(type_id: int) -> tuple[Field, ...]:
    """The declared fields of the message a control type carries, in wire order."""
    return BY_TYPE[type_id][1].fields


def kraft_control_label(type_id: int) -> str:
    """What DumpLogSegments prints before the value of a control type."""
    return BY_TYPE[type_id][0]


__all__ = [
    "decode_kraft_control", "encode_kraft_control", "is_kraft_control", "kraft_control_fields", "kraft_control_label",
]

"""Encode and decode the consumer protocol payloads of JoinGroup (subscription) and SyncGroup (assignment)."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import cache
from typing import Any

from kafka_spark.errors import DecodeError
from kafka_spark.protocol.compiler import Plan, compile_struct
from kafka_spark.protocol.primitives import INT16, EncodeError
from kafka_spark.protocol.schema import Message
from kafka_spark.protocol.schemas.consumer_protocol import ASSIGNMENT, SUBSCRIPTION, VERSIONS

PROTOCOL_TYPE = "consumer"

_MESSAGES = {"subscription": SUBSCRIPTION, "assignment": ASSIGNMENT}


@cache
def _plan(kind: str, version: int) -> Plan:
    message: Message = _MESSAGES[kind]
    return compile_struct(message.fields, version, False)


def _encode(kind: str, value: Mapping[str, Any], version: int) -> bytes:
    if version not in VERSIONS:
        raise EncodeError(f"consumer protocol {kind} version {version} is outside {VERSIONS}")
    out = bytearray(INT16.pack(version))
    try:
        _plan(kind, version).encode(out, value)
    except (struct.error, TypeError, OverflowError, UnicodeEncodeError) as exc:
        raise EncodeError(f"consumer protocol {kind}: {exc}") from exc
    return bytes(out)


def _decode(kind: str, data: Any) -> tuple[int, dict[str, Any]]:
    buf = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    try:
        version = INT16.unpack_from(buf, 0)[0]
        if version < 0:
            raise DecodeError(f"consumer protocol {kind} has negative version {version}")
        # newer versions only append fields: read what this client knows, ignore the tail
        value, _ = _plan(kind, min(version, VERSIONS.hi)).decode(buf, 2)
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise DecodeError(f"consumer protocol {kind}: {exc}") from exc
    return version, value


def encode_subscription(value: Mapping[str, Any], version: int = VERSIONS.hi) -> bytes:
    """JoinGroup protocol metadata for the "consumer" protocol type."""
    return _encode("subscription", value, version)


def decode_subscription(data: Any) -> tuple[int, dict[str, Any]]:
    """Decode JoinGroup member metadata into (version, subscription)."""
    return _decode("subscription", data)


def encode_assignment(value: Mapping[str, Any], version: int = VERSIONS.hi) -> bytes:
    """SyncGroup assignment bytes for the "consumer" protocol type."""
    return _encode("assignment", value, version)


def decode_assignment(data: Any) -> tuple[int, dict[str, Any]]:
    """Decode SyncGroup assignment bytes into (version, assignment)."""
    return _decode("assignment", data)

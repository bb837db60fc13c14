"""Encode requests and decode responses (and the reverse, for scripted test brokers).

Bodies are plain dicts keyed by snake_case field names. Missing fields take their declared
defaults when encoding; decoding returns every declared field (defaults for those the version
lacks). A frame on the wire is an int32 size followed by that many bytes; the ``frame`` arguments
here are the bytes after the size prefix.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kafka_spark.errors import DecodeError
from kafka_spark.protocol.headers import (
    RequestHeader,
    read_request_header,
    read_response_header,
    request_header_version,
    response_header_version,
    write_request_header,
    write_response_header,
)
from kafka_spark.protocol.primitives import INT32, EncodeError, GatheredFrame, byte_view
from kafka_spark.protocol.registry import get_api, plan

PRODUCE_KEY = 0
DEFAULT_MAX_FRAME = 100 * 1024 * 1024

# what a malformed frame can make the generic decoder raise; all become DecodeError
_DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError)
_ENCODE_FAILURES = (struct.error, TypeError, OverflowError, UnicodeEncodeError, AttributeError)


def _finish_frame(out: bytearray) -> bytes:
    INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: Mapping[str, Any],
    gathered: bool = False,
) -> bytearray:
    """A complete request frame (size prefix, header, body) ready to write to a socket; `gathered`: a
    `GatheredFrame` whose large record sets are referenced, not copied (for a vectored write)."""
    body_plan = plan(api_key, version, "request")
    out = GatheredFrame(4) if gathered else bytearray(4)
    try:
        write_request_header(
            out, request_header_version(api_key, version), api_key, version, correlation_id, client_id
        )
        body_plan.encode(out, body)
    except _ENCODE_FAILURES as exc:
        raise EncodeError(f"{get_api(api_key).name} v{version} request: {exc}") from exc
    INT32.pack_into(out, 0, len(out) - 4 + (out.referenced if isinstance(out, GatheredFrame) else 0))
    return out  # not copied to bytes: a Produce request's frame holds every batch it sends


def decode_response(api_key: int, version: int, frame: Any) -> tuple[int, dict[str, Any]]:
    """Decode a response frame (without its size prefix) into (correlation id, body).

    ``records`` fields in the body are memoryview slices of `frame`; keep `frame` unchanged while
    they are in use.
    """
    body_plan = plan(api_key, version, "response")
    buf = byte_view(frame)
    try:
        correlation_id, pos = read_response_header(buf, response_header_version(api_key, version))
        body, pos = body_plan.decode(buf, pos)
    except _DECODE_FAILURES as exc:
        raise DecodeError(f"{get_api(api_key).name} v{version} response: {exc}") from exc
    _check_consumed(buf, pos, api_key, version, "response")
    return correlation_id, body


def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """A complete response frame (size prefix, header, body); for scripted brokers and tests."""
    body_plan = plan(api_key, version, "response")
    out = bytearray(4)
    try:
        write_response_header(out, response_header_version(api_key, version), correlation_id)
        body_plan.encode(out, body)
    except _ENCODE_FAILURES as exc:
        raise EncodeError(f"{get_api(api_key).name} v{version} response: {exc}") from exc
    return _finish_frame(out)


def decode_request(frame: Any) -> tuple[RequestHeader, dict[str, Any]]:
    """Decode a request frame (without its size prefix) into (header, body); for scripted brokers."""
    buf = byte_view(frame)
    try:
        header, pos = read_request_header(buf)
        body_plan = plan(header.api_key, header.api_version, "request")
        body, pos = body_plan.decode(buf, pos)
    except _DECODE_FAILURES as exc:
        raise DecodeError(f"request: {exc}") from exc
    _check_consumed(buf, pos, header.api_key, header.api_version, "request")
    return header, body


def encode_body(api_key: int, version: int, kind: str, body: Mapping[str, Any]) -> bytes:
    """Only the body of a request or response, without header or size prefix."""
    body_plan = plan(api_key, version, kind)
    out = bytearray()
    try:
        body_plan.encode(out, body)
    except _ENCODE_FAILURES as exc:
        raise EncodeError(f"{get_api(api_key).name} v{version} {kind}: {exc}") from exc
    return bytes(out)


def decode_body(api_key: int, version: int, kind: str, data: Any) -> dict[str, Any]:
    """Decode a body without header; every byte must belong to it."""
    body_plan = plan(api_key, version, kind)
    buf = byte_view(data)
    try:
        body, pos = body_plan.decode(buf, 0)
    except _DECODE_FAILURES as exc:
        raise DecodeError(f"{get_api(api_key).name} v{version} {kind}: {exc}") from exc
    _check_consumed(buf, pos, api_key, version, kind)
    return body


def _check_consumed(buf: memoryview, pos: int, api_key: int, version: int, kind: str) -> None:
    # leftover bytes mean the frame was decoded with the wrong version or is corrupt
    if pos != len(buf):
        raise DecodeError(
            f"{get_api(api_key).name} v{version} {kind}: {len(buf) - pos} bytes left after the body"
        )


def peek_correlation_id(frame: Any) -> int:
    """The correlation id a response frame starts with, before knowing which request it answers."""
    buf = byte_view(frame)
    if len(buf) < 4:
        raise DecodeError(f"response frame of {len(buf)} bytes has no correlation id")
    return INT32.unpack_from(buf, 0)[0]


def read_frame_size(prefix: Any, max_size: int = DEFAULT_MAX_FRAME) -> int:
    """The size in a 4-byte frame prefix, refusing negative sizes and sizes above `max_size`."""
    buf = byte_view(prefix)
    if len(buf) < 4:
        raise DecodeError(f"a frame size prefix has 4 bytes, got {len(buf)}")
    size = INT32.unpack_from(buf, 0)[0]
    if size < 0 or size > max_size:
        raise DecodeError(f"frame size {size} is outside 0..{max_size}")
    return size


def expects_response(api_key: int, body: Mapping[str, Any]) -> bool:
    """False only for Produce with acks=0, which the broker never answers."""
    return not (api_key == PRODUCE_KEY and body.get("acks", -1) == 0)

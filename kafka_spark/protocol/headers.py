"""Request headers v0–v2 and response headers v0–v1.

Flexible API versions use request header v2 and response header v1 (both end in a tagged-field
section). ApiVersions responses always use header v0 so that any client can parse them. The
request header's client id is a classic nullable string in every header version.
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_spark.errors import DecodeError
from kafka_spark.protocol.compiler import compile_struct
from kafka_spark.protocol.primitives import INT16, INT32, make_string_reader, write_string
from kafka_spark.protocol.registry import is_flexible
from kafka_spark.protocol.schemas import APIS

API_VERSIONS_KEY = 18

# an empty declaration compiled as flexible reads and writes just a tagged-field section
_TAGS = compile_struct((), 0, True)
_read_client_id = make_string_reader(compact=False, nullable=True)


class RequestHeader(NamedTuple):
    """A decoded request header."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def request_header_version(api_key: int, version: int) -> int:
    """2 for flexible versions, else 1 (v0, without a client id, is never sent)."""
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """1 for flexible versions except ApiVersions, which always answers with v0."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def write_request_header(
    out: bytearray, header_version: int, api_key: int, version: int, correlation_id: int, client_id: str | None
) -> None:
    """Append a request header of `header_version`."""
    out += INT16.pack(api_key)
    out += INT16.pack(version)
    out += INT32.pack(correlation_id)
    if header_version >= 1:
        write_string(out, client_id, compact=False, nullable=True)
    if header_version >= 2:
        out.append(0)


def read_request_header(buf: memoryview) -> tuple[RequestHeader, int]:
    """Decode a request header (v1 or v2, chosen from the API key and version it starts with)."""
    api_key = INT16.unpack_from(buf, 0)[0]
    version = INT16.unpack_from(buf, 2)[0]
    correlation_id = INT32.unpack_from(buf, 4)[0]
    spec = APIS.get(api_key)
    if spec is None or version not in spec.versions:
        raise DecodeError(f"request header names API key {api_key} version {version}, which is not supported")
    client_id, pos = _read_client_id(buf, 8)
    if request_header_version(api_key, version) >= 2:
        _, pos = _TAGS.decode(buf, pos)
    return RequestHeader(api_key, version, correlation_id, client_id), pos


def write_response_header(out: bytearray, header_version: int, correlation_id: int) -> None:
    """Append a response header of `header_version`."""
    out += INT32.pack(correlation_id)
    if header_version >= 1:
        out.append(0)


def read_response_header(buf: memoryview, header_version: int) -> tuple[int, int]:
    """Decode a response header; return (correlation id, body position). Header tags are skipped."""
    correlation_id = INT32.unpack_from(buf, 0)[0]
    pos = 4
    if header_version >= 1:
        _, pos = _TAGS.decode(buf, pos)
    return correlation_id, pos

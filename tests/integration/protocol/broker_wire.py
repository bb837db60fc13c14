"""A deliberately tiny blocking socket helper: one connection, one request at a time, raw bytes kept.

It exists so the protocol codec can be proven against live brokers without the product's client
layer; it does no retries, no pipelining and no TLS.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_spark.protocol import (
    BrokerVersions,
    api_versions_request,
    decode_response,
    encode_request,
    parse_api_versions_response,
    read_frame_size,
    supported_versions,
)

CLIENT_ID = "kafka-spark-protocol-proof"
API_VERSIONS = 18


@dataclass(frozen=True)
class Exchange:
    """One request/response round trip: the bytes both ways and the decoded response body."""

    api_key: int
    version: int
    correlation_id: int
    request: bytes
    response: bytes
    body: dict[str, Any]


class BrokerWire:
    """A plain TCP connection to one broker listener."""

    def __init__(self, address: str, timeout: float = 20.0) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._next_id = 1

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BrokerWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            buf += chunk
        return bytes(buf)

    def round_trip(self, frame: bytes) -> bytes:
        """Write a whole request frame and return the response frame without its size prefix."""
        self._sock.sendall(frame)
        return self._read_exact(read_frame_size(self._read_exact(4)))

    def _correlation_id(self) -> int:
        corr, self._next_id = self._next_id, self._next_id + 1
        return corr

    def exchange(self, api_key: int, version: int, body: Mapping[str, Any]) -> Exchange:
        """Send one request and decode its response, checking the correlation id."""
        corr = self._correlation_id()
        request = encode_request(api_key, version, corr, CLIENT_ID, body)
        response = self.round_trip(request)
        got, decoded = decode_response(api_key, version, response)
        if got != corr:
            raise AssertionError(f"correlation id {got} answers request {corr}")
        return Exchange(api_key, version, corr, request, response, decoded)

    def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """The decoded response body of one request."""
        return self.exchange(api_key, version, body).body

    def api_versions_exchange(self, version: int) -> Exchange:
        """ApiVersions at `version`, through the codec's own request builder and parser."""
        corr = self._correlation_id()
        # the package's own software name and version: brokers reject names outside [a-zA-Z0-9.-]
        request = api_versions_request(corr, CLIENT_ID, version=version)
        response = self.round_trip(request)
        got, decoded = parse_api_versions_response(response, version)
        if got != corr:
            raise AssertionError(f"correlation id {got} answers request {corr}")
        return Exchange(API_VERSIONS, version, corr, request, response, decoded)

    def broker_versions(self) -> BrokerVersions:
        """The broker's ranges, asked with ApiVersions v0 (every broker since 0.10 answers it)."""
        return BrokerVersions.from_response(self.api_versions_exchange(0).body)


def proven_range(versions: BrokerVersions, api_key: int) -> tuple[int, int]:
    """The versions of `api_key` both the broker and this package speak (the range worth proving)."""
    broker_lo, broker_hi = versions.ranges[api_key]
    ours_lo, ours_hi = supported_versions(api_key)
    lo, hi = max(broker_lo, ours_lo), min(broker_hi, ours_hi)
    if lo > hi:
        raise AssertionError(f"API {api_key}: broker {broker_lo}-{broker_hi}, ours {ours_lo}-{ours_hi}")
    return lo, hi

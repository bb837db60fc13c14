"""Readiness probe: one ApiVersions v0 round trip, the cheapest request every broker since 0.10 answers."""

from __future__ import annotations

import socket
import ssl
import struct

_API_VERSIONS = 18
_CLIENT_ID = b"kafka-spark-probe"


def api_versions(host: str, port: int, timeout: float = 2.0,
                 ssl_context: ssl.SSLContext | None = None) -> dict[int, tuple[int, int]]:
    """Send ApiVersions v0 and return {api_key: (min_version, max_version)}; raise OSError on failure."""
    header = struct.pack(">hhih", _API_VERSIONS, 0, 1, len(_CLIENT_ID)) + _CLIENT_ID
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock: socket.socket = ssl_context.wrap_socket(raw, server_hostname=host) if ssl_context else raw
        sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        if not 0 < size < 1 << 20:
            raise OSError(f"implausible ApiVersions response size {size}")
        body = _read_exact(sock, size)
    correlation, error, count = struct.unpack_from(">ihi", body, 0)
    if correlation != 1 or error != 0:
        raise OSError(f"ApiVersions failed: correlation {correlation}, error code {error}")
    out = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 10 + 6 * i)
        out[key] = (lo, hi)
    return out


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether a broker at `host:port` completes an ApiVersions round trip (readiness)."""
    try:
        api_versions(host, port, timeout=timeout)
        return True
    except OSError:
        return False

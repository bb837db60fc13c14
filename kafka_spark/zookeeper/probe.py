"""ZooKeeper readiness: the `srvr` four-letter command answers with the server version once it serves."""

from __future__ import annotations

import socket


def srvr(host: str, port: int, timeout: float = 2.0) -> str:
    """Send `srvr` and return the reply text; raise OSError if the server is not serving."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"srvr")
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    reply = b"".join(chunks).decode(errors="replace")
    if not reply.startswith("Zookeeper version"):
        raise OSError(f"ZooKeeper not serving yet: {reply.strip()[:80]!r}")
    return reply

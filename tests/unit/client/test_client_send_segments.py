"""`send_segments` writes its buffers in order, exactly once, through partial writes of a small socket buffer
and past the number of buffers one sendmsg() takes."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from kafka_spark.client.net import connection


def _received(segments: list[memoryview]) -> bytes:
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # each sendmsg() writes only part
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: right.recv(7919), b"")))
    reader.start()
    try:
        connection.send_segments(left, segments)
    finally:
        left.close()
        reader.join(10)
        right.close()
    return b"".join(chunks)


@pytest.mark.parametrize("iov_max", [3, 1024])
def test_segments_arrive_whole_and_in_order(iov_max: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "_IOV_MAX", iov_max)
    parts = [os.urandom(n) for n in (5, 0, 300_000, 1, 70_000, 0, 12, 2_000_000, 3)]
    assert _received([memoryview(p) for p in parts]) == b"".join(parts)


def test_nothing_to_send() -> None:
    assert _received([memoryview(b"")]) == b""

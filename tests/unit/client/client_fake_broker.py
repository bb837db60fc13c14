"""A scripted broker on 127.0.0.1 for faults real brokers do not produce on demand."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

from kafka_spark.protocol import ApiKey, decode_request, encode_response, supported_versions
from kafka_spark.protocol.schemas import APIS

CLOSE = "close"
TOPIC_ID = uuid.UUID(int=0x1234)

Handler = Callable[[int, int, dict[str, Any]], Any]


class FakeBroker:
    """Answers ApiVersions and Metadata itself (one broker, one topic) and passes other requests to `handler`.

    The handler returns a response body, or ``CLOSE`` to drop the connection. `requests` records
    ``(api_key, version, body)`` of everything received.
    """

    def __init__(self, handler: Handler, topic: str = "t", partitions: int = 1,
                 max_versions: dict[int, int] | None = None) -> None:
        self.handler = handler
        self.topic = topic
        self.partitions = partitions
        self.max_versions = max_versions or {}
        self.requests: list[tuple[int, int, dict[str, Any]]] = []
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop = True
        self._server.close()

    def __enter__(self) -> FakeBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                size = _read(conn, 4)
                if size is None:
                    return
                frame = _read(conn, int.from_bytes(size, "big"))
                if frame is None:
                    return
                header, body = decode_request(frame)
                self.requests.append((header.api_key, header.api_version, body))
                answer = self._answer(header.api_key, header.api_version, body)
                if answer == CLOSE:
                    return
                conn.sendall(encode_response(header.api_key, header.api_version, header.correlation_id, answer))

    def _answer(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        if api_key == ApiKey.API_VERSIONS:
            keys = [{"api_key": k, "min_version": supported_versions(k)[0],
                     "max_version": self.max_versions.get(k, supported_versions(k)[1])} for k in APIS]
            return {"error_code": 0, "api_keys": keys}
        if api_key == ApiKey.METADATA:
            return self.metadata()
        return self.handler(api_key, version, body)

    def metadata(self) -> dict[str, Any]:
        return {
            "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "fake", "controller_id": 1,
            "topics": [{"error_code": 0, "name": self.topic, "topic_id": TOPIC_ID, "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 0,
                                        "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}
                                       for p in range(self.partitions)]}],
        }


def _read(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = conn.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def fetch_response(partition: int, records: bytes | None, error_code: int = 0, high_watermark: int = 0,
                   throttle_ms: int = 0, aborted: list[dict[str, int]] | None = None) -> dict[str, Any]:
    """A Fetch response body for one partition of the fake topic."""
    return {
        "throttle_time_ms": throttle_ms, "error_code": 0, "session_id": 0,
        "responses": [{"topic": "t", "topic_id": TOPIC_ID, "partitions": [{
            "partition_index": partition, "error_code": error_code, "high_watermark": high_watermark,
            "last_stable_offset": high_watermark, "log_start_offset": 0, "aborted_transactions": aborted,
            "preferred_read_replica": -1, "records": records}]}],
    }

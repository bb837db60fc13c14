"""A scripted fake broker that lies: the faults a real broker will not produce on demand.

It answers ApiVersions, Metadata and ListOffsets honestly (one topic, one partition, itself the
leader, offsets [0, 10)) and every Fetch with the chosen `mode`: lying lengths, negative or huge
counts, a 2 GiB frame, truncated batches, offsets that go backwards, a wrong correlation id,
garbage after a valid frame, or bytes dripped slowly. 127.0.0.1 only; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from kafka_spark.protocol import ApiKey, decode_request, encode_response
from kafka_spark.records import encode_batch

TOPIC = "hostile"
END = 10  # the partition's high watermark: offsets [0, 10) exist
# The versions this fake declares; Fetch stays name-based (v12) so it needs no topic ids.
VERSIONS = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 12), ApiKey.FETCH: (4, 12),
            ApiKey.LIST_OFFSETS: (1, 7)}
MODES = ("honest", "lying_length", "frame_2gib", "frame_64mib_lie", "negative_count", "huge_count",
         "truncated_batch", "batch_claims_2gib", "offsets_backwards", "offsets_backwards_in_batch",
         "wrong_correlation", "garbage_after_frame", "drip")
_HOLD_S = 30.0  # the longest any connection is held open without progress


def records(start: int, end: int) -> bytes:
    """Honest v2 batches of offsets [start, end), two records each."""
    out = []
    for base in range(start, end, 2):
        n = min(2, end - base)
        out.append(encode_batch([(f"k{o}".encode(), f"v{o}".encode(), [], 1_700_000_000_000 + o)
                                 for o in range(base, base + n)], base_offset=base))
    return b"".join(out)


def fetch_body(data: bytes, high_watermark: int = END) -> dict:
    """A Fetch response body holding `data` as the one partition's records."""
    part = {"partition_index": 0, "error_code": 0, "high_watermark": high_watermark,
            "last_stable_offset": high_watermark, "log_start_offset": 0, "aborted_transactions": [],
            "preferred_read_replica": -1, "records": data}
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic": TOPIC, "partitions": [part]}]}


class HostileBroker:
    """Serve one lie (`mode`) to every Fetch; `fetches` counts the Fetch requests answered."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
        self.mode = mode
        self.fetches = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._accept = threading.Thread(target=self._serve, name=f"hostile-{mode}", daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> HostileBroker:
        self._accept.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.close()
        for t in [self._accept, *self._threads]:
            t.join(timeout=5)

    def __enter__(self) -> HostileBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- serving ------------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(_HOLD_S)
            self._conns.append(conn)
            t = threading.Thread(target=self._session, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _read_exact(self, conn: socket.socket, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            chunk = conn.recv(n - len(out))
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def _session(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            while not self._stop.is_set():
                head = self._read_exact(conn, 4)
                if head is None:
                    return
                payload = self._read_exact(conn, struct.unpack(">i", head)[0])
                if payload is None:
                    return
                header, body = decode_request(payload)
                reply = self._answer(header.api_key, header.api_version, header.correlation_id, body)
                if reply is None:
                    return
                for piece in reply:
                    if isinstance(piece, float):
                        if self._stop.wait(piece):
                            return
                    else:
                        conn.sendall(piece)

    def _answer(self, key: int, version: int, corr: int, body: dict) -> list[bytes | float] | None:
        if key == ApiKey.API_VERSIONS:
            keys = [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in VERSIONS.items()]
            return [encode_response(key, version, corr, {"error_code": 0, "api_keys": keys})]
        if key == ApiKey.METADATA:
            broker = {"node_id": 0, "host": "127.0.0.1", "port": self.port, "rack": None}
            part = {"error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 0, "replica_nodes": [0],
                    "isr_nodes": [0], "offline_replicas": []}
            topic = {"error_code": 0, "name": TOPIC, "is_internal": False, "partitions": [part]}
            return [encode_response(key, version, corr, {"brokers": [broker], "controller_id": 0,
                                                         "topics": [topic], "cluster_id": "hostile"})]
        if key == ApiKey.LIST_OFFSETS:
            topics = [{"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1,
                 "offset": 0 if p["timestamp"] == -2 else END, "leader_epoch": 0} for p in t["partitions"]]}
                for t in body["topics"]]
            return [encode_response(key, version, corr, {"topics": topics})]
        if key == ApiKey.FETCH:
            self.fetches += 1
            offset = body["topics"][0]["partitions"][0]["fetch_offset"]
            return self._fetch(version, corr, offset)
        return None

    def _fetch(self, version: int, corr: int, offset: int) -> list[bytes | float]:
        honest = encode_response(ApiKey.FETCH, version, corr, fetch_body(records(offset, END)))
        mode = self.mode
        if mode == "honest":
            return [honest]
        if mode == "lying_length":
            # claims 1 MiB more than it sends, then says nothing
            return [struct.pack(">i", len(honest) - 4 + (1 << 20)) + honest[4:], _HOLD_S]
        if mode == "frame_2gib":
            return [b"\x7f\xff\xff\xff" + honest[4:], _HOLD_S]
        if mode == "frame_64mib_lie":
            return [struct.pack(">i", 64 << 20) + honest[4:], _HOLD_S]
        if mode in ("negative_count", "huge_count"):
            # the `responses` array count sits after the header, throttle, error code and session id
            frame = bytearray(honest)
            at = 4 + 4 + 4 + 2 + 4 if version >= 7 else 4 + 4 + 4
            struct.pack_into(">i", frame, at, -3 if mode == "negative_count" else 0x7FFFFFFF)
            return [bytes(frame)]
        if mode == "truncated_batch":
            data = records(offset, END)
            return [encode_response(ApiKey.FETCH, version, corr, fetch_body(data[: min(len(data), 40)]))]
        if mode == "batch_claims_2gib":
            batch = bytearray(records(offset, END))
            struct.pack_into(">i", batch, 8, 0x7FFFFFF0)
            return [encode_response(ApiKey.FETCH, version, corr, fetch_body(bytes(batch)))]
        if mode == "offsets_backwards":
            data = records(max(offset, 4), END) + records(0, 4)
            return [encode_response(ApiKey.FETCH, version, corr, fetch_body(data))]
        if mode == "offsets_backwards_in_batch":
            batch = encode_batch([(b"k", b"v", [], 1_700_000_000_000)] * 4, base_offset=offset,
                                 offset_deltas=[0, 3, 1, 2], last_offset_delta=3)
            return [encode_response(ApiKey.FETCH, version, corr, fetch_body(batch))]
        if mode == "wrong_correlation":
            return [encode_response(ApiKey.FETCH, version, corr + 1, fetch_body(records(offset, END)))]
        if mode == "garbage_after_frame":
            return [honest + b"\xde\xad\xbe\xef" * 8]
        # drip: one byte at a time, each well inside the socket timeout, the whole far beyond it
        return [b for i in range(len(honest)) for b in (honest[i:i + 1], 0.25)]

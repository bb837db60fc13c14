"""A scripted broker that reads Produce requests as they come, holds its answers, and appends batches as an
idempotent broker does: per producer id and partition, an epoch, the next sequence and the last five batches (a
resent one is answered with its first offsets). Faults are scripted per batch; `max_batch_bytes` refuses larger
batches with MESSAGE_TOO_LARGE as a topic's ``max.message.bytes`` does."""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client_fake_broker import CLOSE, TOPIC_ID, FakeBroker, _read

from kafka_spark.protocol import ApiKey, decode_request, encode_response
from kafka_spark.records import iter_records, scan_batches

QUIET_S = 0.05  # a held answer goes once no request came for this long
NOT_LEADER = 6
MESSAGE_TOO_LARGE = 10
OUT_OF_ORDER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_RECORD = 87
LOSE = "lose"  # a fault: append the batch, then drop the connection instead of answering


@dataclass
class _Producer:
    epoch: int
    next: int = 0
    recent: list[tuple[int, int, int]] = field(default_factory=list)  # (base sequence, count, base offset)


@dataclass
class _Connection:
    unanswered: int = 0
    last_read: float = 0.0


class SequencedBroker(FakeBroker):
    """One topic; answers Produce in order, each held until `hold_for` Produce requests of its connection are
    unanswered or none came for QUIET_S. `faults` maps (partition, epoch, base sequence) to an error code or LOSE,
    used once; a batch over `max_batch_bytes` is refused with MESSAGE_TOO_LARGE. Records what arrived (`sent`),
    what was refused (`refused`) and each partition's log of values."""

    def __init__(self, partitions: int = 1, hold_for: int = 5,
                 faults: Mapping[tuple[int, int, int], int | str] | None = None,
                 max_batch_bytes: int | None = None) -> None:
        self.hold_for = hold_for
        self.max_batch_bytes = max_batch_bytes
        self.faults = dict(faults or {})
        self.logs: dict[int, list[bytes | None]] = {p: [] for p in range(partitions)}
        self.sent: list[tuple[int, int, int, int]] = []  # (partition, producer id, epoch, base sequence), as read
        self.refused: list[tuple[int, int, int, int]] = []  # (partition, epoch, base sequence, error code)
        self.events: list[tuple[str, Any]] = []  # ("produce", partitions) as read, ("answer", n), ("txn", api)
        self.max_unanswered = 0
        self.producer_ids = iter(range(1000, 2000))
        self._producers: dict[tuple[int, int], _Producer] = {}
        self._state = threading.Condition()
        super().__init__(self._coordinator, partitions=partitions)

    def __enter__(self) -> SequencedBroker:
        return self

    def _serve(self, conn: socket.socket) -> None:
        state = _Connection()
        pending: queue.Queue[tuple[Any, dict[str, Any]] | None] = queue.Queue()
        writer = threading.Thread(target=self._write, args=(conn, pending, state), daemon=True)
        writer.start()
        while True:
            size = _read(conn, 4)
            frame = None if size is None else _read(conn, int.from_bytes(size, "big"))
            if frame is None:
                break
            header, body = decode_request(frame)
            self.requests.append((header.api_key, header.api_version, body))
            with self._state:
                if header.api_key == ApiKey.PRODUCE:
                    state.unanswered += 1
                    self.max_unanswered = max(self.max_unanswered, state.unanswered)
                    self.events.append(("produce", sorted(p["index"] for t in body["topic_data"]
                                                          for p in t["partition_data"])))
                    for topic in body["topic_data"]:
                        for part in topic["partition_data"]:
                            (info,) = scan_batches(part["records"]).batches
                            self.sent.append((part["index"], info.producer_id, info.producer_epoch,
                                              info.base_sequence))
                elif header.api_key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN):
                    self.events.append(("txn", (header.api_key, body)))
                state.last_read = time.monotonic()
                self._state.notify_all()
            pending.put((header, body))
        pending.put(None)
        writer.join(10)
        conn.close()

    def _write(self, conn: socket.socket, pending: queue.Queue, state: _Connection) -> None:
        while (item := pending.get()) is not None:
            header, body = item
            if header.api_key == ApiKey.PRODUCE:
                self._hold(state)
                answer = self._produce(body)
                with self._state:
                    state.unanswered -= 1
                    self.events.append(("answer", 1))
            else:
                answer = self._answer(header.api_key, header.api_version, body)
            if answer == CLOSE:
                conn.shutdown(socket.SHUT_RDWR)
                return
            try:
                conn.sendall(encode_response(header.api_key, header.api_version, header.correlation_id, answer))
            except OSError:
                return

    def _hold(self, state: _Connection) -> None:
        deadline = time.monotonic() + 5
        with self._state:
            while state.unanswered < self.hold_for and time.monotonic() - state.last_read < QUIET_S \
                    and time.monotonic() < deadline:
                self._state.wait(0.01)

    def _produce(self, body: dict[str, Any]) -> Any:
        answers = []
        lose = False
        for topic in body["topic_data"]:
            for part in topic["partition_data"]:
                code, base, lost = self._append(part["index"], part["records"])
                lose = lose or lost
                answers.append({"index": part["index"], "error_code": code, "base_offset": base,
                                "log_start_offset": 0})
        if lose:
            return CLOSE
        return {"responses": [{"name": self.topic, "topic_id": TOPIC_ID, "partition_responses": answers}],
                "throttle_time_ms": 0}

    def _append(self, partition: int, records: bytes) -> tuple[int, int, bool]:
        (info,) = scan_batches(records).batches
        pid, epoch, seq = info.producer_id, info.producer_epoch, info.base_sequence
        fault = self.faults.pop((partition, epoch, seq), None)
        if isinstance(fault, int):
            return self._refuse(partition, epoch, seq, fault)
        if self.max_batch_bytes is not None and len(records) > self.max_batch_bytes:
            return self._refuse(partition, epoch, seq, MESSAGE_TOO_LARGE)
        log = self.logs[partition]
        values = [r.value for r in iter_records(records)]
        if pid >= 0:
            state = self._producers.get((pid, partition))
            if state is not None and epoch < state.epoch:
                return self._refuse(partition, epoch, seq, INVALID_PRODUCER_EPOCH)
            if state is not None and epoch == state.epoch:
                for base_seq, count, offset in state.recent:
                    if (base_seq, count) == (seq, len(values)):
                        return 0, offset, fault == LOSE  # a duplicate: answered with its first offsets
                if seq != state.next:
                    return self._refuse(partition, epoch, seq, OUT_OF_ORDER)
            elif state is not None and seq != 0:
                return self._refuse(partition, epoch, seq, OUT_OF_ORDER)  # a new epoch starts at 0
            else:
                # no state for the producer: any first sequence goes, as on brokers before Kafka 4.5 (KAFKA-15591)
                state = self._producers[pid, partition] = _Producer(epoch)
            state.next = seq + len(values)
            state.recent = [*state.recent[-4:], (seq, len(values), len(log))]
        log.extend(values)
        return 0, len(log) - len(values), fault == LOSE

    def _refuse(self, partition: int, epoch: int, seq: int, code: int) -> tuple[int, int, bool]:
        self.refused.append((partition, epoch, seq, code))
        return code, -1, False

    def _coordinator(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        # this broker coordinates every transaction
        if api_key == ApiKey.FIND_COORDINATOR:
            me = {"node_id": 1, "host": "127.0.0.1", "port": self.port, "error_code": 0, "error_message": None}
            keys = body.get("coordinator_keys") or [body.get("key")]
            return {"throttle_time_ms": 0, **me, "coordinators": [{"key": k, **me} for k in keys]}
        if api_key == ApiKey.INIT_PRODUCER_ID:
            return {"throttle_time_ms": 0, "error_code": 0, "producer_id": next(self.producer_ids), "producer_epoch": 0}
        if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
            return {"throttle_time_ms": 0, "results_by_topic": [
                {"name": t["name"], "results_by_partition": [{"partition_index": p, "partition_error_code": 0}
                                                             for p in t["partitions"]]} for t in body["topics"]]}
        if api_key == ApiKey.END_TXN:
            return {"throttle_time_ms": 0, "error_code": 0}
        raise AssertionError(f"unexpected request {api_key}")

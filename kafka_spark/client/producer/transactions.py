"""Kafka transactions: a producer id and epoch for a transactional id, the partitions and consumer-group offsets
a transaction covers, and its end (commit or abort) — also from a process other than the one that wrote.

The protocol is the one of Kafka's transactions v1, which every broker since 0.11 serves: partitions join a
transaction with AddPartitionsToTxn before the first batch goes to them, a group joins with AddOffsetsToTxn
before its TxnOffsetCommit, and EndTxn makes the coordinator write the commit or abort markers. The coordinator
ties a transaction to (transactional id, producer id, epoch), not to a connection, so any process holding those
three can end it (`end_transaction`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.errors import TransactionError, TransactionFencedError
from kafka_spark.client.groups.coordinator import GROUP, TRANSACTION, Coordinators
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import KafkaSparkError
from kafka_spark.errors.codes import BrokerError, broker_error
from kafka_spark.protocol import ApiKey

log = logging.getLogger(__name__)

# INVALID_PRODUCER_EPOCH, PRODUCER_FENCED: a newer producer took the transactional id over
FENCED_CODES = frozenset({47, 90})
INVALID_TXN_STATE = 48
# Later versions belong to transactions v2 (KIP-890), where adds are implicit and every end bumps the epoch;
# a v1 client keeps below them, as the Java client does when transaction.version 2 is not in use.
PRODUCE_MAX_VERSION = 11
END_TXN_MAX_VERSION = 4
TXN_OFFSET_COMMIT_MAX_VERSION = 4
ADD_PARTITIONS_MAX_VERSION = 3  # v4+ is broker-to-broker


@dataclass(frozen=True)
class TransactionHandle:
    """What ends an open transaction from anywhere: the transactional id and the producer id and epoch that own it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


def _raise_for(code: int, transactional_id: str, what: str, message: str | None = None) -> None:
    if not code:
        return
    if code in FENCED_CODES:
        raise TransactionFencedError(transactional_id, f"{what} was refused: a newer producer initialised this "
                                                       "transactional id, which aborted this producer's transaction")
    raise broker_error(code, f"{what} for transactional id {transactional_id!r}", message)


class Transactions:
    """The transactional state of one producer; thread-safe (the sender thread adds partitions)."""

    def __init__(self, cluster: Cluster, transactional_id: str, timeout_ms: int) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.producer_id = -1
        self.producer_epoch = -1
        self.in_transaction = False
        self.partitions: set[TopicPartition] = set()
        self.groups: set[str] = set()
        self._coordinators = Coordinators(cluster, TRANSACTION)
        self._groups = Coordinators(cluster, GROUP)
        self._lock = threading.Lock()

    @property
    def handle(self) -> TransactionHandle:
        """The current transaction's id, producer id and epoch."""
        return TransactionHandle(self.transactional_id, self.producer_id, self.producer_epoch)

    @property
    def empty(self) -> bool:
        """True while the transaction covers no partition and no group (ending it needs no request)."""
        return not self.partitions and not self.groups

    def _call(self, what: str, api_key: int, body: Mapping[str, Any]) -> None:
        # one request to the transaction coordinator; retriable answers (CONCURRENT_TRANSACTIONS while the markers
        # of the previous transaction are written, a moved coordinator) are retried
        tid = self.transactional_id

        def attempt(_: int) -> None:
            response, _v = self._coordinators.request(tid, api_key, lambda v: body)
            _raise_for(response["error_code"], tid, what)

        self._coordinators.retry(tid, what, attempt)

    def init(self) -> TransactionHandle:
        """InitProducerId with the transactional id: a new epoch that fences every older producer of the id and
        aborts the transaction one of them left open."""
        tid = self.transactional_id

        def attempt(_: int) -> dict[str, Any]:
            response, _v = self._coordinators.request(tid, ApiKey.INIT_PRODUCER_ID, lambda v: {
                "transactional_id": tid, "transaction_timeout_ms": self.timeout_ms,
                "producer_id": -1, "producer_epoch": -1})
            # CONCURRENT_TRANSACTIONS (retriable) while the coordinator aborts the old transaction
            _raise_for(response["error_code"], tid, "InitProducerId")
            return response

        response = self._coordinators.retry(tid, "InitProducerId", attempt)
        with self._lock:
            self.producer_id, self.producer_epoch = response["producer_id"], response["producer_epoch"]
            self.in_transaction = False
            self.partitions.clear()
            self.groups.clear()
        return self.handle

    def begin(self) -> None:
        """Start a transaction (locally: the coordinator hears of it with the first partition or group)."""
        if self.producer_id < 0:
            raise TransactionError(self.transactional_id, "init_transactions() must come before a transaction")
        if self.in_transaction:
            raise TransactionError(self.transactional_id, "a transaction is already open")
        self.in_transaction = True

    def require_open(self) -> None:
        """Raise unless a transaction is open (records and offsets go only inside one)."""
        if not self.in_transaction:
            raise TransactionError(self.transactional_id, "no transaction is open; call begin_transaction() first")

    def add_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for the partitions not yet in the transaction (before any batch goes to them)."""
        with self._lock:
            new = sorted(set(tps) - self.partitions)
        if not new:
            return
        by_topic: dict[str, list[int]] = {}
        for tp in new:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        tid = self.transactional_id

        def attempt(_: int) -> None:
            response, _v = self._coordinators.request(tid, ApiKey.ADD_PARTITIONS_TO_TXN, lambda v: {
                "transactional_id": tid, "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                ADD_PARTITIONS_MAX_VERSION)
            for topic in response["results_by_topic"]:
                for p in topic["results_by_partition"]:
                    _raise_for(p["partition_error_code"], tid,
                               f"AddPartitionsToTxn {topic['name']}-{p['partition_index']}")

        self._coordinators.retry(tid, "AddPartitionsToTxn", attempt)
        with self._lock:
            self.partitions.update(new)

    def add_offsets(self, group_id: str, offsets: Mapping[TopicPartition, tuple[int, str | None]]) -> None:
        """Commit `offsets` (partition -> (next offset, metadata)) for `group_id` inside the transaction: they
        become visible to the group when the transaction commits and vanish if it aborts."""
        self.require_open()
        tid = self.transactional_id
        if group_id not in self.groups:
            self._call(f"AddOffsetsToTxn for group {group_id!r}", ApiKey.ADD_OFFSETS_TO_TXN, {
                "transactional_id": tid, "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "group_id": group_id})
            self.groups.add(group_id)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, (offset, metadata) in offsets.items():
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset, "committed_leader_epoch": -1,
                "committed_metadata": metadata})
        body = {"transactional_id": tid, "group_id": group_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "generation_id": -1, "member_id": "",
                "group_instance_id": None, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

        def attempt(_: int) -> None:
            response, _v = self._groups.request(group_id, ApiKey.TXN_OFFSET_COMMIT, lambda v: body,
                                                TXN_OFFSET_COMMIT_MAX_VERSION)
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    _raise_for(p["error_code"], tid, f"TxnOffsetCommit {topic['name']}-{p['partition_index']}")

        self._groups.retry(group_id, "TxnOffsetCommit", attempt)

    def end(self, commit: bool) -> None:
        """Commit or abort the open transaction (no request when it covers nothing)."""
        if not self.in_transaction:
            raise TransactionError(self.transactional_id, "no transaction is open")
        if not self.empty:
            end_transaction(self.cluster, self.handle, commit, self._coordinators)
        with self._lock:
            self.in_transaction = False
            self.partitions.clear()
            self.groups.clear()


def end_transactions(cluster: Cluster, handles: Sequence[TransactionHandle], commit: bool) -> list[Exception | None]:
    """EndTxn for many transactions at once, each one's outcome in order (None: ended). One FindCoordinator
    finds every id's coordinator (v4+) and the EndTxn requests go out together, each coordinator answering them
    in order (one round trip rather than two per transaction); a transaction whose first answer is not success
    goes through `end_transaction`, with its retries."""
    coordinators = Coordinators(cluster, TRANSACTION)
    outcomes: list[Exception | None] = [None] * len(handles)
    sent: list[tuple[int, Any, Any]] = []
    with contextlib.suppress(KafkaSparkError):  # each id is looked up again below
        coordinators.locate([h.transactional_id for h in handles])
    for i, handle in enumerate(handles):
        try:
            conn = coordinators.connection(handle.transactional_id)
            version = min(conn.version(ApiKey.END_TXN), END_TXN_MAX_VERSION)
            sent.append((i, conn, conn.send(ApiKey.END_TXN, _end_body(handle, commit), version)))
        except KafkaSparkError:
            sent.append((i, None, None))
    for i, conn, request in sent:
        try:
            if conn is not None and not conn.receive(request)["error_code"]:
                continue
        except KafkaSparkError:
            pass
        try:
            end_transaction(cluster, handles[i], commit, coordinators)
        except KafkaSparkError as exc:
            outcomes[i] = exc
    return outcomes


def _end_body(handle: TransactionHandle, commit: bool) -> dict[str, Any]:
    return {"transactional_id": handle.transactional_id, "producer_id": handle.producer_id,
            "producer_epoch": handle.producer_epoch, "committed": commit}


def end_transaction(cluster: Cluster, handle: TransactionHandle, commit: bool,
                    coordinators: Coordinators | None = None) -> None:
    """EndTxn: commit or abort the transaction `handle` owns, from any process.

    Repeating the same end is harmless (the coordinator answers a finished commit with success). A newer epoch
    of the id (another producer initialised it) raises `TransactionFencedError`: the transaction was aborted.
    """
    coordinators = coordinators or Coordinators(cluster, TRANSACTION)
    tid = handle.transactional_id
    what = "EndTxn(commit)" if commit else "EndTxn(abort)"

    def attempt(_: int) -> None:
        response, _v = coordinators.request(tid, ApiKey.END_TXN, lambda v: _end_body(handle, commit),
                                            END_TXN_MAX_VERSION)
        # CONCURRENT_TRANSACTIONS (retriable) while the markers of an earlier end are still being written
        _raise_for(response["error_code"], tid, what)

    try:
        coordinators.retry(tid, what, attempt)
    except BrokerError as exc:
        if exc.code == INVALID_TXN_STATE:
            raise TransactionError(tid, f"{what} found the transaction in another state (already ended the other "
                                        f"way, or never begun): {exc}") from exc
        raise

"""A classic consumer-group member: JoinGroup, SyncGroup (range assignor), Heartbeat, LeaveGroup.

Enough for a pipeline to appear in Kafka's consumer-groups tool with its assignment and to commit
offsets as a member. Heartbeats run on a daemon thread while the member is joined.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.groups.admin import CommittedOffset, GroupAdmin
from kafka_spark.client.groups.assignor import RANGE, range_assign
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import KafkaSparkError
from kafka_spark.errors.codes import BrokerError, broker_error
from kafka_spark.protocol import ApiKey, decode_assignment, decode_subscription, encode_assignment, encode_subscription

log = logging.getLogger(__name__)

MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
_REJOIN = frozenset({REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION})
_SUBSCRIPTION_VERSION = 1


class GroupMember:
    """One member of a classic ``consumer`` group subscribed to `topics`."""

    def __init__(self, cluster: Cluster, group_id: str, topics: Iterable[str],
                 admin: GroupAdmin | None = None) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.topics = sorted(set(topics))
        self.admin = admin or GroupAdmin(cluster)
        config = cluster.config
        self.session_timeout_ms = config.session_timeout_ms
        self.rebalance_timeout_ms = config.max_poll_interval_ms
        self.heartbeat_interval_s = config.heartbeat_interval_ms / 1000
        self.group_instance_id = config.group_instance_id
        self.member_id = ""
        self.generation_id = -1
        self.leader = False
        self.assignment: list[TopicPartition] = []
        self._needs_rejoin = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()

    def __enter__(self) -> GroupMember:
        self.join()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"GroupMember({self.group_id!r}, member={self.member_id!r}, generation={self.generation_id}, "
                f"{len(self.assignment)} partitions)")

    # ---- join ------------------------------------------------------------------------------

    def join(self, timeout_s: float | None = None) -> list[TopicPartition]:
        """Join (or rejoin) the group and return this member's assigned partitions."""
        deadline = time.monotonic() + (timeout_s or self.cluster.config.default_api_timeout_ms / 1000)
        with self._lock:
            while True:
                try:
                    self._join_once()
                    self._sync()
                    break
                except BrokerError as exc:
                    if exc.code not in _REJOIN or time.monotonic() > deadline:
                        raise
                    if exc.code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                        self.member_id, self.generation_id = "", -1
                    log.info("group %s: rejoining after %s", self.group_id, exc.error_name)
            self._needs_rejoin = False
        self._start_heartbeats()
        return list(self.assignment)

    def _join_once(self) -> None:
        metadata = encode_subscription({"topics": self.topics, "user_data": None, "owned_partitions": []},
                                       _SUBSCRIPTION_VERSION)

        def body(_: int) -> dict[str, Any]:
            return {
                "group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
                "protocols": [{"name": RANGE, "metadata": metadata}], "reason": None,
            }

        def attempt(_: int) -> dict[str, Any]:
            response, _v = self.admin.request(self.group_id, ApiKey.JOIN_GROUP, body)
            if response["error_code"] == MEMBER_ID_REQUIRED:
                # KIP-394: the first join only obtains a member id
                self.member_id = response["member_id"]
                response, _v = self.admin.request(self.group_id, ApiKey.JOIN_GROUP, body)
            if response["error_code"]:
                raise broker_error(response["error_code"], f"JoinGroup {self.group_id!r}")
            return response

        response = self.admin.retry(self.group_id, "JoinGroup", attempt)
        self.member_id = response["member_id"]
        self.generation_id = response["generation_id"]
        self.leader = response["leader"] == self.member_id
        self._members = response["members"]
        self._protocol = response.get("protocol_name") or RANGE

    def _assign(self) -> list[dict[str, Any]]:
        subscriptions = {}
        for m in self._members:
            _, sub = decode_subscription(m["metadata"])
            subscriptions[m["member_id"]] = sub["topics"]
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        infos = self.cluster.topics(topics) if topics else {}
        counts = {t: len(info.partitions) for t, info in infos.items()}
        plan = range_assign(subscriptions, counts)
        return [{
            "member_id": member,
            "assignment": encode_assignment({
                "assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in sorted(parts.items())],
                "user_data": None,
            }, _SUBSCRIPTION_VERSION),
        } for member, parts in plan.items()]

    def _sync(self) -> None:
        assignments = self._assign() if self.leader else []

        def body(_: int) -> dict[str, Any]:
            return {
                "group_id": self.group_id, "generation_id": self.generation_id, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": "consumer",
                "protocol_name": self._protocol, "assignments": assignments,
            }

        def attempt(_: int) -> dict[str, Any]:
            response, _v = self.admin.request(self.group_id, ApiKey.SYNC_GROUP, body)
            if response["error_code"]:
                raise broker_error(response["error_code"], f"SyncGroup {self.group_id!r}")
            return response

        response = self.admin.retry(self.group_id, "SyncGroup", attempt)
        self.assignment = []
        if response["assignment"]:
            _, value = decode_assignment(response["assignment"])
            self.assignment = sorted(TopicPartition(a["topic"], p) for a in value["assigned_partitions"]
                                     for p in a["partitions"])

    # ---- heartbeats ------------------------------------------------------------------------

    def heartbeat(self) -> bool:
        """Send one heartbeat; False when the group is rebalancing and `join()` must be called again."""
        with self._lock:
            if self.generation_id < 0:
                return False

            def body(_: int) -> dict[str, Any]:
                return {"group_id": self.group_id, "generation_id": self.generation_id,
                        "member_id": self.member_id, "group_instance_id": self.group_instance_id}

            response, _v = self.admin.request(self.group_id, ApiKey.HEARTBEAT, body)
            code = response["error_code"]
            if code in _REJOIN:
                self._needs_rejoin = True
                if code != REBALANCE_IN_PROGRESS:
                    self.member_id, self.generation_id = "", -1
                return False
            if code:
                raise broker_error(code, f"Heartbeat {self.group_id!r}")
            return True

    @property
    def needs_rejoin(self) -> bool:
        """True after a heartbeat learned of a rebalance."""
        return self._needs_rejoin

    def _start_heartbeats(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat_loop, name=f"heartbeat-{self.group_id}",
                                         daemon=True)
        self._thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval_s):
            try:
                if not self.heartbeat():
                    # a rebalance: rejoin so the group keeps this member (and its assignment) listed
                    self.join()
            except (KafkaSparkError, OSError) as exc:
                log.warning("group %s: heartbeat failed: %s", self.group_id, exc)

    # ---- commits and leaving ---------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, int | CommittedOffset]) -> None:
        """Commit offsets as this member (generation-checked by the coordinator)."""
        self.admin.commit(self.group_id, offsets, self.generation_id, self.member_id, self.group_instance_id)

    def leave(self) -> None:
        """Leave the group so its partitions are reassigned at once."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.heartbeat_interval_s + 5)
        with self._lock:
            if not self.member_id:
                return

            def body(version: int) -> dict[str, Any]:
                return {"group_id": self.group_id, "member_id": self.member_id,
                        "members": [{"member_id": self.member_id, "group_instance_id": self.group_instance_id,
                                     "reason": "the member is closing"}]}

            try:
                response, _v = self.admin.request(self.group_id, ApiKey.LEAVE_GROUP, body)
                if response["error_code"] and response["error_code"] != UNKNOWN_MEMBER_ID:
                    raise broker_error(response["error_code"], f"LeaveGroup {self.group_id!r}")
            finally:
                self.member_id, self.generation_id, self.assignment = "", -1, []

    def close(self) -> None:
        """Leave the group (best effort) and stop heartbeating."""
        try:
            self.leave()
        except (KafkaSparkError, OSError) as exc:
            log.warning("group %s: leaving failed: %s", self.group_id, exc)

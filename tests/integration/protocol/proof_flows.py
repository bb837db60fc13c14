"""Request bodies and short request sequences, shared by the live tests and the golden capture script.

Every flow returns labelled exchanges so that the same checks (proof_checks) can judge a live
answer and a stored golden vector alike.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker_wire import BrokerWire, Exchange
from record_bytes import message, record_batch

from kafka_spark.protocol import ApiKey, encode_assignment, encode_subscription

COORDINATOR_NOT_AVAILABLE = 15
UNKNOWN_TOPIC_OR_PARTITION = 3
MEMBER_ID_REQUIRED = 79
LATEST, EARLIEST = -1, -2

# the APIs of a classic consumer group's life, in the order a consumer uses them
GROUP_APIS = (
    ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.LEAVE_GROUP,
)

Labelled = list[tuple[str, Exchange]]


@dataclass(frozen=True)
class TopicFacts:
    """A single-partition topic: its name, its id (zero where Metadata is too old to say) and record count."""

    name: str
    topic_id: uuid.UUID
    records: int


def wait_for(probe: Callable[[], Exchange | None], what: str, timeout: float = 30.0) -> Exchange:
    """Repeat `probe` until it returns an exchange; brokers finish some work asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.2)


def metadata(wire: BrokerWire, version: int, topic: str) -> Exchange:
    """Metadata for one topic by name (never all topics: v0 reads an empty list as "all")."""
    return wire.exchange(ApiKey.METADATA, version, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
    })


def topic_facts(wire: BrokerWire, version: int, topic: str, records: int,
                served_by: int | None = None) -> TopicFacts:
    """Wait until `topic` has a leader and return its id (Metadata v10+ carries topic ids).

    Metadata can name a leader before that broker serves the partition; with `served_by` (a ListOffsets
    version) this also waits until the leader answers for partition 0 without an error.
    """
    def ready() -> Exchange | None:
        ex = metadata(wire, version, topic)
        (entry,) = ex.body["topics"]
        parts = entry["partitions"]
        ok = entry["error_code"] == 0 and parts and all(p["leader_id"] >= 0 for p in parts)
        return ex if ok else None

    (entry,) = wait_for(ready, f"a leader for {topic}").body["topics"]
    if served_by is not None:
        def serving() -> Exchange | None:
            ex = list_offsets(wire, served_by, topic, -1)
            codes = [p["error_code"] for t in ex.body["topics"] for p in t["partitions"]]
            return ex if codes == [0] else None

        wait_for(serving, f"the leader of {topic} to serve it")
    return TopicFacts(topic, entry["topic_id"], records)


def list_offsets(wire: BrokerWire, version: int, topic: str, timestamp: int) -> Exchange:
    """The offset of partition 0 at `timestamp` (-1 latest, -2 earliest)."""
    return wire.exchange(ApiKey.LIST_OFFSETS, version, {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}],
    })


def fetch(wire: BrokerWire, version: int, topic: TopicFacts, offset: int = 0, max_wait_ms: int = 500,
          session_epoch: int = -1) -> Exchange:
    """A full fetch of partition 0; v13+ names the topic by id, older versions by name.

    Epoch -1 fetches without a session; 0 (v7+) asks the broker to open an incremental session.
    """
    return wire.exchange(ApiKey.FETCH, version, {
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 4 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": session_epoch,
        "topics": [{
            "topic": topic.name,
            "topic_id": topic.topic_id,
            "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}],
        }],
        "forgotten_topics_data": [],
        "rack_id": "",
    })


def produce_magic(version: int) -> int:
    """The record format a Produce version carries: v0-1 messages v0, v2 messages v1, v3+ batches v2."""
    if version <= 1:
        return 0
    return 1 if version == 2 else 2


def produce_one(wire: BrokerWire, version: int, topic: TopicFacts, key: bytes, value: bytes) -> Exchange:
    """Append one hand-assembled record to partition 0, acknowledged by all in-sync replicas."""
    magic, now = produce_magic(version), int(time.time() * 1000)
    data = message(magic, key, value, now) if magic < 2 else record_batch(key, value, now)
    return wire.exchange(ApiKey.PRODUCE, version, {
        "transactional_id": None, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": topic.name, "topic_id": topic.topic_id,
                        "partition_data": [{"index": 0, "records": data}]}],
    })


def create_topics(wire: BrokerWire, version: int, name: str, partitions: int,
                  configs: Mapping[str, str]) -> Exchange:
    """Create one topic with a partition count and topic configs."""
    return wire.exchange(ApiKey.CREATE_TOPICS, version, {
        "topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in configs.items()],
        }],
        "timeout_ms": 30000,
        "validate_only": False,
    })


def delete_topics(wire: BrokerWire, version: int, name: str, topic_id: uuid.UUID | None) -> Exchange:
    """Delete one topic; v6 addresses it by id when one is known, older versions by name."""
    by_id = topic_id is not None and topic_id.int != 0
    return wire.exchange(ApiKey.DELETE_TOPICS, version, {
        "topic_names": [name],
        "topics": [{"name": None, "topic_id": topic_id}] if by_id else [{"name": name}],
        "timeout_ms": 30000,
    })


def topic_lifecycle(wire: BrokerWire, versions: Mapping[int, int], name: str, metadata_version: int) -> Labelled:
    """CreateTopics, Metadata until the partitions have leaders, DeleteTopics, Metadata until gone."""
    out: Labelled = []
    created = create_topics(wire, versions[ApiKey.CREATE_TOPICS], name, 2, {"retention.ms": "3600000"})
    out.append(("create-topics", created))
    (entry,) = created.body["topics"]
    if entry["error_code"] != 0:
        return out
    facts = topic_facts(wire, metadata_version, name, 0)
    # CreateTopics v7 returns the id; it must be the one Metadata reports
    topic_id = entry["topic_id"] if entry["topic_id"].int else facts.topic_id
    out.append(("delete-topics", delete_topics(wire, versions[ApiKey.DELETE_TOPICS], name, topic_id)))

    def gone() -> Exchange | None:
        ex = metadata(wire, metadata_version, name)
        return ex if ex.body["topics"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION else None

    out.append(("metadata-deleted", wait_for(gone, f"deletion of {name}")))
    return out


def find_coordinator(wire: BrokerWire, version: int, group: str) -> Exchange:
    """The group's coordinator; waits while the offsets topic is still being created."""
    body = {"key": group, "key_type": 0, "coordinator_keys": [group]}

    def found() -> Exchange | None:
        ex = wire.exchange(ApiKey.FIND_COORDINATOR, version, body)
        codes = [c["error_code"] for c in ex.body["coordinators"]] if version >= 4 else [ex.body["error_code"]]
        return None if COORDINATOR_NOT_AVAILABLE in codes else ex

    return wait_for(found, f"a coordinator for {group}")


def subscription(topic: str) -> bytes:
    """The "consumer" protocol metadata a member sends in JoinGroup."""
    return encode_subscription({"topics": [topic], "user_data": None, "owned_partitions": []}, version=0)


def group_lifecycle(wire: BrokerWire, versions: Mapping[int, int], group: str, topic: str,
                    commit_offset: int, instance_id: str | None = None) -> Labelled:
    """One member's whole life in a classic group: find, join, sync, heartbeat, commit, fetch, describe, list, leave.

    `versions` holds the version to use for each group API; an `instance_id` makes the member
    static (KIP-345, JoinGroup v5+).
    """
    out: Labelled = [("find-coordinator", find_coordinator(wire, versions[ApiKey.FIND_COORDINATOR], group))]

    join_version = versions[ApiKey.JOIN_GROUP]
    join_body: dict[str, Any] = {
        "group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
        "group_instance_id": instance_id, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription(topic)}], "reason": "protocol proof",
    }
    joined = wire.exchange(ApiKey.JOIN_GROUP, join_version, join_body)
    if joined.body["error_code"] == MEMBER_ID_REQUIRED:
        # KIP-394 (v4+): the first join only hands out a member id; join again with it
        out.append(("join-group-member-id-required", joined))
        joined = wire.exchange(ApiKey.JOIN_GROUP, join_version, {**join_body, "member_id": joined.body["member_id"]})
    out.append(("join-group", joined))
    member, generation = joined.body["member_id"], joined.body["generation_id"]

    assignment = encode_assignment({"assigned_partitions": [{"topic": topic, "partitions": [0]}], "user_data": None},
                                   version=0)
    out.append(("sync-group", wire.exchange(ApiKey.SYNC_GROUP, versions[ApiKey.SYNC_GROUP], {
        "group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": instance_id,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": assignment}],
    })))
    out.append(("heartbeat", wire.exchange(ApiKey.HEARTBEAT, versions[ApiKey.HEARTBEAT], {
        "group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": instance_id,
    })))
    out.append(("offset-commit", wire.exchange(ApiKey.OFFSET_COMMIT, versions[ApiKey.OFFSET_COMMIT], {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": instance_id, "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [{
            "partition_index": 0, "committed_offset": commit_offset, "committed_leader_epoch": -1,
            "commit_timestamp": -1, "committed_metadata": "proof",
        }]}],
    })))
    topics = [{"name": topic, "partition_indexes": [0]}]
    out.append(("offset-fetch", wire.exchange(ApiKey.OFFSET_FETCH, versions[ApiKey.OFFSET_FETCH], {
        "group_id": group, "topics": topics, "require_stable": False,
        "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}],
    })))
    out.append(("describe-groups", wire.exchange(ApiKey.DESCRIBE_GROUPS, versions[ApiKey.DESCRIBE_GROUPS], {
        "groups": [group], "include_authorized_operations": False,
    })))
    out.append(("list-groups", wire.exchange(ApiKey.LIST_GROUPS, versions[ApiKey.LIST_GROUPS], {
        "states_filter": [], "types_filter": [],
    })))
    out.append(("leave-group", wire.exchange(ApiKey.LEAVE_GROUP, versions[ApiKey.LEAVE_GROUP], {
        "group_id": group, "member_id": member,
        "members": [{"member_id": member, "group_instance_id": instance_id, "reason": "protocol proof done"}],
    })))
    return out


def init_producer_id(wire: BrokerWire, version: int) -> Exchange:
    """A producer id for an idempotent (not transactional) producer."""
    return wire.exchange(ApiKey.INIT_PRODUCER_ID, version, {
        "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1,
    })


def sasl_handshake(wire: BrokerWire, version: int, mechanism: str) -> Exchange:
    """Ask for a SASL mechanism; the answer lists every mechanism the listener enables."""
    return wire.exchange(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def sasl_plain_authenticate(wire: BrokerWire, version: int, user: str, password: str) -> Exchange:
    """One PLAIN token (RFC 4616: authzid NUL authcid NUL passwd) inside SaslAuthenticate."""
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return wire.exchange(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def level_versions(ranges: Mapping[int, tuple[int, int]], level: str) -> dict[int, int]:
    """Each API's lowest (`level` "min") or highest ("max") proven version."""
    return {key: lo if level == "min" else hi for key, (lo, hi) in ranges.items()}


def produce_with_java(server: Any, topic: str, count: int) -> None:
    """Write `count` keyed records with Kafka's own console producer (one JVM start)."""
    server.tools.console_produce(topic, [f"key-{i}:value-{i}" for i in range(count)], key_separator=":")


def server_context(server: Any) -> dict[str, Any]:
    """Release, broker id and PLAINTEXT port of a harness server (KRaft node or ZooKeeper-mode broker)."""
    broker_id = server.node_id if hasattr(server, "node_id") else server.broker_id
    return {"broker": server.version, "broker_id": broker_id, "port": int(server.bootstrap.rpartition(":")[2])}

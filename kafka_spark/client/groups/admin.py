"""Consumer groups: coordinator lookup, committed offsets, listing, describing and lag.

`GroupAdmin` works on any group without joining it (commits then use generation -1, as a standalone
consumer would). `GroupMember` (in `membership.py`) joins a group for tools that list members.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import latest_offsets
from kafka_spark.client.groups.coordinator import GROUP, Coordinators
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.net.connection import BrokerConnection
from kafka_spark.errors.codes import BrokerError, broker_error
from kafka_spark.protocol import ApiKey, decode_assignment

T = TypeVar("T")

@dataclass(frozen=True)
class CommittedOffset:
    """A committed position: the next offset to read, its metadata string and leader epoch."""

    offset: int
    metadata: str | None = None
    leader_epoch: int = -1


@dataclass(frozen=True)
class GroupListing:
    """A group as ListGroups reports it."""

    group_id: str
    protocol_type: str
    state: str = ""
    group_type: str = ""


@dataclass(frozen=True)
class MemberDescription:
    """A group member with its assignment decoded (for the ``consumer`` protocol)."""

    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None = None
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class GroupDescription:
    """A group as DescribeGroups reports it."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = field(default_factory=tuple)
    error_code: int = 0


@dataclass(frozen=True)
class PartitionLag:
    """How far a group's committed offset is behind a partition's end."""

    committed: int | None
    end: int

    @property
    def lag(self) -> int | None:
        """end - committed, or None if the group has no committed offset for the partition."""
        return None if self.committed is None else max(self.end - self.committed, 0)


def raise_coordinator_error(code: int, context: str) -> None:
    """Raise for a non-zero group error code; coordinator moves become retriable."""
    if code:
        raise broker_error(code, context)


class GroupAdmin:
    """Group operations that do not need membership."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._coordinators = Coordinators(cluster, GROUP)

    # ---- coordinator -----------------------------------------------------------------------

    def coordinator(self, group_id: str) -> BrokerConnection:
        """The connection to the group's coordinator (found with FindCoordinator and cached)."""
        return self._coordinators.connection(group_id)

    def forget_coordinator(self, group_id: str) -> None:
        """Drop the cached coordinator (after NOT_COORDINATOR and the like)."""
        self._coordinators.forget(group_id)

    def request(self, group_id: str, api_key: int, make_body: Any) -> tuple[dict[str, Any], int]:
        """One request to the coordinator; `make_body(version)` builds the body for the negotiated version."""
        return self._coordinators.request(group_id, api_key, make_body)

    def retry(self, group_id: str, what: str, attempt: Callable[[int], T]) -> T:
        """Run `attempt` with retries; coordinator moves make it look the coordinator up again."""
        return self._coordinators.retry(group_id, what, attempt)

    # ---- offsets ---------------------------------------------------------------------------

    def commit(self, group_id: str, offsets: Mapping[TopicPartition, int | CommittedOffset],
               generation_id: int = -1, member_id: str = "", group_instance_id: str | None = None) -> None:
        """Commit offsets (the next offset to read per partition) for a group."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, value in offsets.items():
            entry = value if isinstance(value, CommittedOffset) else CommittedOffset(int(value))
            by_topic.setdefault(tp[0], []).append({
                "partition_index": tp[1], "committed_offset": entry.offset,
                "committed_leader_epoch": entry.leader_epoch, "committed_metadata": entry.metadata or "",
                "commit_timestamp": -1,
            })

        def body(version: int) -> dict[str, Any]:
            return {
                "group_id": group_id, "generation_id_or_member_epoch": generation_id, "member_id": member_id,
                "group_instance_id": group_instance_id, "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }

        def attempt_and_check(_: int) -> None:
            response, _v = self.request(group_id, ApiKey.OFFSET_COMMIT, body)
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    raise_coordinator_error(p["error_code"], f"OffsetCommit {topic['name']}-{p['partition_index']}")

        self.retry(group_id, "commit offsets", attempt_and_check)

    def committed(self, group_id: str, tps: Iterable[TopicPartition] | None = None,
                  require_stable: bool = False) -> dict[TopicPartition, CommittedOffset]:
        """A group's committed offsets for `tps` (None: all partitions it has committed); absent ones omitted."""
        wanted = None if tps is None else [TopicPartition(*tp) for tp in tps]
        topics = None
        if wanted is not None:
            grouped: dict[str, list[int]] = {}
            for tp in wanted:
                grouped.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in grouped.items()]

        def body(version: int) -> dict[str, Any]:
            if version >= 8:
                return {"groups": [{"group_id": group_id, "topics": topics}], "require_stable": require_stable}
            if version < 2 and topics is None:
                raise BrokerError("OffsetFetch before v2 cannot list every partition; name them",
                                  f"group {group_id!r}")
            return {"group_id": group_id, "topics": topics, "require_stable": require_stable}

        def attempt(_: int) -> dict[TopicPartition, CommittedOffset]:
            response, version = self.request(group_id, ApiKey.OFFSET_FETCH, body)
            if version >= 8:
                group = response["groups"][0]
                code, topic_list = group["error_code"], group["topics"]
            else:
                code, topic_list = response.get("error_code", 0), response["topics"]
            raise_coordinator_error(code, f"OffsetFetch group {group_id!r}")
            out = {}
            for topic in topic_list:
                for p in topic["partitions"]:
                    raise_coordinator_error(p["error_code"], f"OffsetFetch {topic['name']}-{p['partition_index']}")
                    if p["committed_offset"] >= 0:
                        out[TopicPartition(topic["name"], p["partition_index"])] = CommittedOffset(
                            p["committed_offset"], p.get("metadata"), p.get("committed_leader_epoch", -1))
            return out

        return self.retry(group_id, "committed offsets", attempt)

    # ---- listing and describing ------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        """Every group of the cluster (asks each broker, as groups live on their coordinators)."""
        self.cluster.refresh_metadata(topics=())
        found: dict[str, GroupListing] = {}
        for node_id in sorted(self.cluster.metadata.brokers):

            def attempt(_: int, node_id: int = node_id) -> dict[str, Any]:
                conn = self.cluster.connection(node_id)
                return conn.request(ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": []})

            response = self.cluster.retry(f"list groups on broker {node_id}", attempt)
            raise_coordinator_error(response["error_code"], f"ListGroups on broker {node_id}")
            for g in response["groups"]:
                found[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"], g.get("group_state", ""),
                                                    g.get("group_type", ""))
        return sorted(found.values(), key=lambda g: g.group_id)

    def describe(self, group_id: str) -> GroupDescription:
        """State, protocol and members (with decoded assignments) of a classic group."""

        def body(version: int) -> dict[str, Any]:
            return {"groups": [group_id], "include_authorized_operations": False}

        def attempt(_: int) -> GroupDescription:
            response, _v = self.request(group_id, ApiKey.DESCRIBE_GROUPS, body)
            g = response["groups"][0]
            raise_coordinator_error(g["error_code"], f"DescribeGroups {group_id!r}")
            members = []
            for m in g["members"]:
                assigned: tuple[TopicPartition, ...] = ()
                if g["protocol_type"] == "consumer" and m["member_assignment"]:
                    try:
                        _, value = decode_assignment(m["member_assignment"])
                        assigned = tuple(TopicPartition(a["topic"], p) for a in value["assigned_partitions"]
                                         for p in a["partitions"])
                    except Exception:
                        assigned = ()
                members.append(MemberDescription(m["member_id"], m["client_id"], m["client_host"],
                                                  m.get("group_instance_id"), assigned))
            return GroupDescription(g["group_id"], g["group_state"], g["protocol_type"], g["protocol_data"],
                                    tuple(members))

        return self.retry(group_id, "describe", attempt)

    def lag(self, group_id: str, isolation_level: str | None = None) -> dict[TopicPartition, PartitionLag]:
        """Committed offset, end offset and lag of every partition the group has committed."""
        committed = self.committed(group_id)
        if not committed:
            return {}
        ends = latest_offsets(self.cluster, committed, isolation_level)
        return {tp: PartitionLag(committed[tp].offset, ends[tp]) for tp in sorted(committed)}


def new_member_suffix() -> str:
    """A random suffix for client-generated ids."""
    return uuid.uuid4().hex[:12]

"""Cluster metadata: brokers, topics (with ids), partitions, leaders and epochs, as a cache.

`metadata_request` builds the request body for a negotiated version; `ClusterMetadata.update`
merges a decoded response. Lookups never do I/O; the cluster refreshes the cache.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.protocol.topic_partition import TopicPartition

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class BrokerInfo:
    """A broker from the Metadata response."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    """One partition: leader (-1 when none), leader epoch, replicas, in-sync replicas, error code."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass
class TopicInfo:
    """A topic: id (zero before Kafka 2.8), partitions by number, whether internal, its error code."""

    name: str
    topic_id: uuid.UUID = ZERO_UUID
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    is_internal: bool = False
    error_code: int = 0
    updated: float = 0.0


def metadata_request(version: int, topics: Iterable[str] | None, allow_auto_create: bool) -> dict[str, Any]:
    """A Metadata request body; `topics` None asks for every topic."""
    names = None if topics is None else sorted(set(topics))
    body: dict[str, Any] = {"allow_auto_topic_creation": allow_auto_create}
    if names is None:
        # v0 has no null: an empty list meant "all topics"
        body["topics"] = [] if version == 0 else None
    else:
        body["topics"] = [{"name": n, "topic_id": ZERO_UUID} for n in names]
    return body


class ClusterMetadata:
    """The latest known state of the cluster."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id: int = -1
        self.updated: float = 0.0
        self.all_topics_updated: float = 0.0

    def update(self, response: Mapping[str, Any], requested: Iterable[str] | None) -> None:
        """Merge a decoded Metadata response; with `requested` None it lists every topic."""
        now = time.monotonic()
        brokers = {b["node_id"]: BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
                   for b in response.get("brokers", ())}
        if brokers:
            self.brokers = brokers
        self.cluster_id = response.get("cluster_id")
        self.controller_id = response.get("controller_id", -1)
        seen = set()
        for t in response.get("topics", ()):
            name = t.get("name")
            if name is None:
                continue
            seen.add(name)
            info = TopicInfo(name=name, topic_id=t.get("topic_id") or ZERO_UUID,
                             is_internal=bool(t.get("is_internal")), error_code=t["error_code"], updated=now)
            for p in t.get("partitions", ()):
                info.partitions[p["partition_index"]] = PartitionInfo(
                    topic=name, partition=p["partition_index"], leader=p["leader_id"],
                    leader_epoch=p.get("leader_epoch", -1), replicas=tuple(p.get("replica_nodes", ())),
                    isr=tuple(p.get("isr_nodes", ())), offline_replicas=tuple(p.get("offline_replicas", ())),
                    error_code=p["error_code"])
            self.topics[name] = info
        if requested is None:
            for name in set(self.topics) - seen:
                del self.topics[name]
            self.all_topics_updated = now
        self.updated = now

    def topic(self, name: str) -> TopicInfo | None:
        """The cached topic, or None."""
        return self.topics.get(name)

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        """The cached partition, or None."""
        info = self.topics.get(tp.topic)
        return None if info is None else info.partitions.get(tp.partition)

    def topic_id(self, name: str) -> uuid.UUID:
        """The topic id (zero when unknown or before topic ids existed)."""
        info = self.topics.get(name)
        return info.topic_id if info else ZERO_UUID

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic name for an id."""
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info.name
        return None

    def partitions_for(self, topic: str) -> list[TopicPartition]:
        """The topic's partitions, in order."""
        info = self.topics.get(topic)
        return [] if info is None else [TopicPartition(topic, p) for p in sorted(info.partitions)]

    def matching(self, pattern: str | re.Pattern[str], include_internal: bool = False) -> list[str]:
        """Topic names in which a regular expression is found (Spark's ``subscribePattern``: a search).

        Spark 4.2's default (admin-client) strategy uses `findFirstIn`, not a full match: `orders`
        selects `orders`, `orders-dlq` and `eu.orders`; anchor it (`^orders$`) for one topic.
        """
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        return sorted(n for n, t in self.topics.items()
                      if regex.search(n) and (include_internal or not t.is_internal) and t.error_code == 0)

    def invalidate(self, topic: str | None = None) -> None:
        """Mark a topic (or everything) stale so the next lookup refreshes it."""
        if topic is None:
            for info in self.topics.values():
                info.updated = 0.0
            self.all_topics_updated = 0.0
        elif topic in self.topics:
            self.topics[topic].updated = 0.0

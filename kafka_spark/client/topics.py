"""Topic administration: create topics with CreateTopics and wait until every partition has a leader."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.errors import TopicNotReadyError
from kafka_spark.errors.codes import broker_error
from kafka_spark.protocol import ApiKey


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: partitions, replication factor and topic configs (`retention.ms`, ...)."""

    name: str
    partitions: int = 1
    replication: int = 1
    configs: Mapping[str, object] = field(default_factory=dict)


def create_topics(cluster: Cluster, topics: Sequence[NewTopic], timeout_s: float = 60.0) -> None:
    """Create `topics` and return once the cluster's metadata shows a leader for each of their partitions.

    Sent to the controller the metadata names (KRaft brokers forward it there themselves). A topic that
    already exists raises `TopicAlreadyExistsError`; a rejected config or count the broker's typed error.
    """
    body: dict[str, Any] = {
        "topics": [{
            "name": t.name, "num_partitions": t.partitions, "replication_factor": t.replication, "assignments": [],
            "configs": [{"name": k, "value": str(v)} for k, v in t.configs.items()],
        } for t in topics],
        "timeout_ms": int(timeout_s * 1000),
        "validate_only": False,
    }
    _wait_for_brokers(cluster, max((t.replication for t in topics), default=1), timeout_s)
    controller = cluster.metadata.controller_id
    conn = cluster.connection(controller) if controller >= 0 else cluster.any_connection()
    response = conn.request(ApiKey.CREATE_TOPICS, body, conn.version(ApiKey.CREATE_TOPICS))
    for entry in response["topics"]:
        if entry["error_code"]:
            raise broker_error(entry["error_code"], f"creating topic {entry['name']!r}", entry.get("error_message"))
    wait_for_leaders(cluster, [t.name for t in topics], timeout_s)


def _wait_for_brokers(cluster: Cluster, count: int, timeout_s: float) -> None:
    # A broker that has just started may not list itself yet; the controller then refuses any replication
    # factor ("larger than available brokers: 0").
    deadline = time.monotonic() + timeout_s
    while len(cluster.refresh_metadata(topics=()).brokers) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def wait_for_leaders(cluster: Cluster, names: Sequence[str], timeout_s: float) -> None:
    """Block until the metadata of every topic in `names` lists a leader for each of its partitions."""
    deadline = time.monotonic() + timeout_s
    while True:
        cluster.refresh_metadata(names)
        infos = [cluster.metadata.topic(n) for n in names]
        if all(i is not None and not i.error_code and i.partitions and all(p.leader >= 0 for p in
                                                                            i.partitions.values()) for i in infos):
            return
        if time.monotonic() > deadline:
            raise TopicNotReadyError(f"topics {', '.join(names)} have no leader for every partition after "
                                    f"{timeout_s:g} s")
        time.sleep(0.05)

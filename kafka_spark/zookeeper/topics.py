"""Topics, partitions, replicas and leaders as the controller keeps them in ZooKeeper."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_spark.zookeeper.errors import ZooKeeperDataError
from kafka_spark.zookeeper.session import ZooKeeperSession

TOPICS_PATH = "/brokers/topics"


@dataclass(frozen=True)
class PartitionState:
    """One partition: its replicas (`/brokers/topics/<t>`) and leader and ISR (`.../partitions/<p>/state`).

    `leader` is -1 while no leader is elected (or no state is written yet).
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()


def _json(path: str, data: bytes) -> dict:
    try:
        raw = json.loads(data)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise ZooKeeperDataError(f"{path} does not hold a JSON object")
    return raw


def parse_assignment(topic: str, data: bytes) -> dict[int, tuple[int, ...]]:
    """Replicas per partition from `/brokers/topics/<topic>`."""
    path = f"{TOPICS_PATH}/{topic}"
    parts = _json(path, data).get("partitions")
    if isinstance(parts, dict):
        try:
            return {int(p): tuple(int(r) for r in replicas) for p, replicas in parts.items()}
        except (TypeError, ValueError):
            pass
    raise ZooKeeperDataError(f"{path} has no partition assignment")


def parse_state(topic: str, partition: int, replicas: tuple[int, ...], data: bytes | None) -> PartitionState:
    """A partition with the leader and ISR of its state znode (none yet: no leader)."""
    if data is None:
        return PartitionState(topic, partition, replicas)
    path = f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"
    raw = _json(path, data)
    try:
        return PartitionState(topic, partition, replicas, int(raw["leader"]), int(raw.get("leader_epoch", -1)),
                              tuple(int(r) for r in raw.get("isr", ())))
    except (KeyError, TypeError, ValueError):
        raise ZooKeeperDataError(f"{path} is not a partition state") from None


def topic_names(session: ZooKeeperSession) -> list[str]:
    """Every topic registered in ZooKeeper, sorted."""
    return session.children(TOPICS_PATH) or []


def topic_partitions(session: ZooKeeperSession, topic: str) -> list[PartitionState] | None:
    """The partitions of `topic` with their leaders, in order; None when the topic does not exist."""
    data = session.get(f"{TOPICS_PATH}/{topic}")
    if data is None:
        return None
    assignment = parse_assignment(topic, data)
    return [parse_state(topic, p, assignment[p], session.get(f"{TOPICS_PATH}/{topic}/partitions/{p}/state"))
            for p in sorted(assignment)]

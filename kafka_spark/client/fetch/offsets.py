"""ListOffsets for many partitions at once: earliest, latest (or last stable), or by timestamp.

Partitions are grouped by leader, one request per leader is written before any answer is read, and
partitions that fail with a retriable error are retried after a metadata refresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.net.connection import BrokerConnection, InFlight
from kafka_spark.errors import KafkaConnectionError
from kafka_spark.errors.codes import LeaderNotAvailableError, broker_error
from kafka_spark.protocol import ApiKey

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


@dataclass(frozen=True)
class ListedOffset:
    """An answer of ListOffsets: `offset` is -1 when no record has a timestamp at or after the one asked."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1


def _isolation(cluster: Cluster, isolation_level: str | None) -> int:
    level = isolation_level or cluster.config.isolation_level
    return 1 if level == "read_committed" else 0


def _request(conn: BrokerConnection, cluster: Cluster, specs: Mapping[TopicPartition, int],
             isolation: int) -> tuple[InFlight, int]:
    version = conn.version(ApiKey.LIST_OFFSETS)
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, spec in specs.items():
        part = cluster.metadata.partition(tp)
        epoch = part.leader_epoch if part is not None else -1
        topics.setdefault(tp.topic, []).append({
            "partition_index": tp.partition, "timestamp": spec, "current_leader_epoch": epoch,
            "max_num_offsets": 1,
        })
    body = {
        "replica_id": -1, "isolation_level": isolation,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        "timeout_ms": cluster.config.request_timeout_ms,
    }
    return conn.send(ApiKey.LIST_OFFSETS, body, version), version


def list_offsets(cluster: Cluster, specs: Mapping[TopicPartition, int],
                 isolation_level: str | None = None) -> dict[TopicPartition, ListedOffset]:
    """Offsets for each partition: ``EARLIEST``, ``LATEST``, ``MAX_TIMESTAMP`` or a timestamp in ms.

    With read_committed, ``LATEST`` is the last stable offset (the end of committed data).
    """
    remaining = {TopicPartition(*tp): int(spec) for tp, spec in specs.items()}
    results: dict[TopicPartition, ListedOffset] = {}
    isolation = _isolation(cluster, isolation_level)

    def attempt(_: int) -> dict[TopicPartition, ListedOffset]:
        sent: list[tuple[BrokerConnection, InFlight, list[TopicPartition]]] = []
        retriable: list[BaseException] = []
        for leader, tps in cluster.group_by_leader(remaining).items():
            try:
                conn = cluster.connection(leader)
                handle, _version = _request(conn, cluster, {tp: remaining[tp] for tp in tps}, isolation)
            except KafkaConnectionError as exc:
                retriable.append(exc)
                continue
            sent.append((conn, handle, tps))
        for conn, handle, _tps in sent:
            try:
                response = conn.receive(handle)
            except KafkaConnectionError as exc:
                retriable.append(exc)
                continue
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    tp = TopicPartition(topic["name"], p["partition_index"])
                    if tp not in remaining:
                        continue
                    if p["error_code"]:
                        error = broker_error(p["error_code"], f"ListOffsets {tp}")
                        if not error.retriable:
                            raise error
                        retriable.append(error)
                        continue
                    results[tp] = _listed(p, handle.version)
                    del remaining[tp]
        if remaining:
            if retriable:
                raise retriable[0]
            missing = ", ".join(str(tp) for tp in list(remaining)[:5])
            raise LeaderNotAvailableError(f"the leader did not answer for {missing}", "ListOffsets")
        return results

    return cluster.retry(f"list offsets of {len(remaining)} partitions", attempt)


def _listed(p: Mapping[str, Any], version: int) -> ListedOffset:
    if version == 0:
        old = p.get("old_style_offsets") or []
        return ListedOffset(old[0] if old else -1)
    return ListedOffset(p["offset"], p.get("timestamp", -1), p.get("leader_epoch", -1))


def earliest_offsets(cluster: Cluster, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """The first available offset of each partition (the log start)."""
    return {tp: r.offset for tp, r in list_offsets(cluster, dict.fromkeys(tps, EARLIEST)).items()}


def latest_offsets(cluster: Cluster, tps: Iterable[TopicPartition],
                   isolation_level: str | None = None) -> dict[TopicPartition, int]:
    """The end of each partition: the high watermark, or the last stable offset with read_committed."""
    return {tp: r.offset for tp, r in list_offsets(cluster, dict.fromkeys(tps, LATEST), isolation_level).items()}


def offsets_for_times(cluster: Cluster, timestamps: Mapping[TopicPartition, int],
                      isolation_level: str | None = None) -> dict[TopicPartition, int | None]:
    """The first offset whose timestamp is at or after the given one; None where no such record exists."""
    for tp, ts in timestamps.items():
        if ts < 0:
            raise ValueError(f"{tp}: a timestamp is milliseconds since the epoch, got {ts}")
    listed = list_offsets(cluster, timestamps, isolation_level)
    return {tp: (r.offset if r.offset >= 0 else None) for tp, r in listed.items()}


__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "ListedOffset",
    "earliest_offsets",
    "latest_offsets",
    "list_offsets",
    "offsets_for_times",
]

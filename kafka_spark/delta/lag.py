"""How far each sink of a Delta table is behind the brokers: its committed offsets against the latest."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.errors import UnknownTopicError
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.location import TableLocation
from kafka_spark.delta.position import SinkCommit, committed_positions
from kafka_spark.errors import ConfigError


@dataclass(frozen=True)
class SinkLag:
    """One sink's position against the brokers.

    `lag` is `latest - committed` per partition; it is negative where the broker's log is behind the
    table (topic recreated or truncated). Partitions the topic gained after the sink's last batch are
    in `new_partitions`, with the lag counted from their first offset, where the next load starts them.
    Topics that no longer exist are in `missing_topics` and have no lag.
    """

    sink_id: str
    batch: int
    committed_at_ms: int
    committed: dict[TopicPartition, int]
    latest: dict[TopicPartition, int] = field(default_factory=dict)
    lag: dict[TopicPartition, int] = field(default_factory=dict)
    new_partitions: tuple[TopicPartition, ...] = ()
    missing_topics: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """Records (offsets) not yet loaded, over all partitions; negative lags do not count."""
        return sum(max(v, 0) for v in self.lag.values())

    @property
    def behind_broker(self) -> list[TopicPartition]:
        """Partitions whose committed offset is past the broker's latest offset."""
        return sorted(tp for tp, v in self.lag.items() if v < 0)


def sink_lag(cluster: Cluster, commit: SinkCommit) -> SinkLag:
    """The lag of one committed sink position, asking `cluster` for the latest offsets."""
    committed = dict(commit.offsets)
    present: list[TopicPartition] = []
    missing: list[str] = []
    for topic in sorted({tp.topic for tp in committed}):
        try:
            present += cluster.partitions(topic)
        except UnknownTopicError:
            missing.append(topic)
    new = [tp for tp in present if tp not in committed]
    latest = latest_offsets(cluster, present, cluster.config.isolation_level) if present else {}
    start = dict(committed)
    if new:
        start.update(earliest_offsets(cluster, new))
    lag = {tp: latest[tp] - start[tp] for tp in present}
    return SinkLag(sink_id=commit.sink_id, batch=commit.batch, committed_at_ms=commit.committed_at_ms,
                   committed=committed, latest=latest, lag=lag, new_partitions=tuple(new),
                   missing_topics=tuple(missing))


def table_lag(table: str | os.PathLike[str] | TableLocation, kafka_config: ClientConfig | Mapping[str, Any],
              sink_id: str | None = None, conf: Any = None) -> dict[str, SinkLag]:
    """The lag of every sink of `table` (or only `sink_id`), keyed by sink id; {} for a table with no sink.

    `table` and `conf` (how to reach its store) are as in `committed_positions`.
    """
    positions = committed_positions(table, conf)
    if sink_id is not None:
        if sink_id not in positions:
            known = ", ".join(sorted(positions)) or "none"
            raise ConfigError(f"sink {sink_id!r} has not committed to {table} (sinks: {known})")
        positions = {sink_id: positions[sink_id]}
    if not positions:
        return {}
    with Cluster(kafka_config) as cluster:
        return {sid: sink_lag(cluster, commit) for sid, commit in sorted(positions.items())}

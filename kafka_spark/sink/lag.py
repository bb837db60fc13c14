"""How far a sink is behind the brokers: its committed offsets against the latest; for a routing, every table's
(what `delta-offsets` shows over a table template)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.errors import UnknownTopicError
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.resolve import resolve_partitions
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.routed import routed_tables, selection
from kafka_spark.sink.table_format import TableFormat


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
    freshness_ms: dict[str, int] | None = None  # of the last batch's records when committed, where recorded

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
                   freshness_ms=commit.freshness_ms,
                   committed=committed, latest=latest, lag=lag, new_partitions=tuple(new),
                   missing_topics=tuple(missing))


def only_sink(positions: dict[str, SinkCommit], sink_id: str | None, table: object) -> dict[str, SinkCommit]:
    """`positions` (a table's, by sink id), or only `sink_id`'s; ConfigError naming the table's sinks when it has
    not committed there."""
    if sink_id is None:
        return positions
    if sink_id not in positions:
        known = ", ".join(sorted(positions)) or "none"
        raise ConfigError(f"sink {sink_id!r} has not committed to {table} (sinks: {known})")
    return {sink_id: positions[sink_id]}


def positions_lag(positions: Mapping[str, SinkCommit], kafka_config: Any) -> dict[str, SinkLag]:
    """The lag of each committed position (a table's sinks), by sink id, asking the brokers of `kafka_config`."""
    if not positions:
        return {}
    with Cluster(kafka_config) as cluster:
        return {sid: sink_lag(cluster, commit) for sid, commit in sorted(positions.items())}


def tables_lag(options: LoadOptions, table_format: TableFormat, conf: Any = None) -> dict[str, SinkLag | None]:
    """Each routed table's committed position against the brokers, by table (None: the table does not exist
    or its sink has not committed), over the topics the options select now. `conf` reaches the tables'
    store, as in `committed_positions`."""
    with Cluster(options.kafka) as cluster:
        topics, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
        routed = routed_tables(options, {tp.topic for tp in tps})
        lags: dict[str, SinkLag | None] = {}
        for table in routed:
            commit = table_format.position(table_format.locate(table.table, conf), table.options.sink_id)
            lags[table.table] = sink_lag(cluster, commit) if commit is not None else None
        return lags

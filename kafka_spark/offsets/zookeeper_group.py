"""Where a read starts: its starting spec resolved, or an old consumer group's positions in ZooKeeper,
checked against the partitions."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError, DataLossError
from kafka_spark.offsets.resolve import OffsetSpec, resolve_offsets
from kafka_spark.zookeeper.offsets import group_offsets
from kafka_spark.zookeeper.session import ZooKeeperSession

log = logging.getLogger(__name__)


def resolve_starts(cluster: Cluster, spec: OffsetSpec, tps: Sequence[TopicPartition], no_match: str = "error",
                   zookeeper_group: str | None = None, fail_on_data_loss: bool = True) -> dict[TopicPartition, int]:
    """Where a read of `tps` starts: `spec` resolved, or `zookeeper_group`'s stored offsets where it has them."""
    starts = resolve_offsets(cluster, spec, list(tps), cluster.config.isolation_level, True, no_match)
    if zookeeper_group:
        starts = zookeeper_group_starts(cluster, zookeeper_group, tps, starts, fail_on_data_loss)
    return starts


def zookeeper_group_starts(cluster: Cluster, group: str, tps: Sequence[TopicPartition],
                           fallback: Mapping[TopicPartition, int], fail_on_data_loss: bool = True
                           ) -> dict[TopicPartition, int]:
    """`group`'s stored offsets where it has one, else `fallback`, for every partition of `tps`.

    A stored offset outside the partition's [earliest, latest] (retention deleted the records, or the
    topic was recreated) is a `DataLossError`; with `fail_on_data_loss` False it is moved to the nearer end.
    """
    settings = cluster.config.zookeeper
    if settings is None:
        raise ConfigError(f"starting from ZooKeeper group {group!r} needs zookeeper.connect")
    with ZooKeeperSession(settings) as session:
        stored = group_offsets(session, group, {tp.topic for tp in tps})
    stored = {tp: off for tp, off in stored.items() if tp in set(tps)}
    log.info("ZooKeeper group %r holds offsets for %d of %d partitions", group, len(stored), len(tps))
    if not stored:
        return {tp: fallback[tp] for tp in tps}
    earliest = earliest_offsets(cluster, list(stored))
    latest = latest_offsets(cluster, list(stored), "read_uncommitted")
    out = {}
    for tp in tps:
        if tp not in stored:
            out[tp] = fallback[tp]
            continue
        off, low, high = stored[tp], earliest[tp], latest[tp]
        if low <= off <= high:
            out[tp] = off
            continue
        problem = (f"ZooKeeper group {group!r} stands at offset {off} of {tp}, outside the partition's offsets "
                   f"[{low}, {high}] (" + ("deleted by retention" if off < low else "the topic was recreated or "
                                           "truncated") + ")")
        if fail_on_data_loss:
            raise DataLossError(f"{problem}; set failOnDataLoss=false to start at the nearest offset instead")
        log.warning("%s; starting at %d", problem, min(max(off, low), high))
        out[tp] = min(max(off, low), high)
    return out

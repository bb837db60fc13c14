"""Driver-side planning of a batch read: partitions, start and end offsets, and the split into tasks."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError, DataLossError
from kafka_spark.offsets.ranges import OffsetRange, split_batch_ranges
from kafka_spark.offsets.resolve import NoOffsetForTimestampError, resolve_offsets, resolve_partitions
from kafka_spark.offsets.zookeeper_group import resolve_starts
from kafka_spark.spark.source.options import SourceOptions

__all__ = ["NoOffsetForTimestampError", "plan_batch"]

log = logging.getLogger(__name__)


def check_past_the_end(ranges: dict[TopicPartition, tuple[int, int]], high_watermarks: Mapping[TopicPartition, int],
                       fail_on_data_loss: bool) -> None:
    # Offsets at or past the high watermark do not exist: Spark's source fails on them unless
    # failOnDataLoss is false, and then reads up to the end. Failing here beats waiting in a task.
    for tp, (start, end) in ranges.items():
        hwm = high_watermarks[tp]
        if end <= hwm:
            continue
        if fail_on_data_loss:
            raise DataLossError(
                f"{tp}: the range ends at offset {end} but the partition ends at {hwm} (high watermark); "
                "those records do not exist. Set failOnDataLoss=false to read up to the end instead.")
        log.warning("%s: the range [%d, %d) goes past the end of the partition (%d); reading up to the end",
                    tp, start, end, hwm)
        ranges[tp] = (min(start, hwm), hwm)


def plan_batch(options: SourceOptions) -> list[OffsetRange]:
    """Offset ranges of a batch read, one per task, with the leader of each as a hint."""
    with Cluster(options.kafka) as cluster:
        tps = resolve_partitions(cluster, options.subscribe, options.pattern, options.assign)
        starts = resolve_starts(cluster, options.starting, tps, options.no_match_strategy, options.zookeeper_group,
                                options.fail_on_data_loss)
        ends = resolve_offsets(cluster, options.ending, tps, cluster.config.isolation_level, False,
                               options.no_match_strategy)
        bounds = {tp: (starts[tp], ends[tp]) for tp in tps}
        if options.ending.kind == "offsets":
            check_past_the_end(bounds, latest_offsets(cluster, tps, "read_uncommitted"), options.fail_on_data_loss)
        ranges = []
        for tp, (start, end) in bounds.items():
            if start > end:
                raise ConfigError(f"{tp}: the starting offset {start} is after the ending offset {end}")
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end, cluster.leader(tp).leader))
    return split_batch_ranges(ranges, options.starting, options.ending, options.min_partitions,
                              options.max_records_per_partition)

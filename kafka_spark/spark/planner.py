"""Driver-side planning of a batch read: partitions, start and end offsets, and the split into tasks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.offsets import earliest_offsets, latest_offsets, offsets_for_times
from kafka_spark.errors import ConfigError, KafkaSparkError
from kafka_spark.offsets.ranges import EARLIEST, LATEST, OffsetRange, split_ranges
from kafka_spark.spark.options import OffsetSpec, SourceOptions


class NoOffsetForTimestampError(KafkaSparkError):
    """No record at or after the requested start timestamp, and the strategy is 'error'."""


def resolve_partitions(cluster: Cluster, options: SourceOptions) -> list[TopicPartition]:
    """The topic-partitions the options select, in order; unknown topics are a typed error."""
    if options.assign:
        tps = [TopicPartition(t, p) for t, p in options.assign]
        cluster.topics({tp.topic for tp in tps})
        for tp in tps:
            cluster.leader(tp)  # raises UnknownTopicError for a partition the topic does not have
        return sorted(tps)
    topics = cluster.matching_topics(options.pattern) if options.pattern else list(options.subscribe)
    return sorted(tp for topic in topics for tp in cluster.partitions(topic))


def resolve_offsets(cluster: Cluster, spec: OffsetSpec, tps: list[TopicPartition], isolation: str,
                    is_start: bool, no_match: str) -> dict[TopicPartition, int]:
    """Concrete offsets for `spec` over `tps`, following Spark's rules for sentinels and timestamps."""
    if not tps:
        return {}
    if spec.kind == "earliest":
        return earliest_offsets(cluster, tps)
    if spec.kind == "latest":
        return latest_offsets(cluster, tps, isolation)
    if spec.kind == "offsets":
        _require_all(spec.offsets, tps, "startingOffsets" if is_start else "endingOffsets")
        wanted = {tp: spec.offsets[tp] for tp in tps}
        earliest = earliest_offsets(cluster, [tp for tp, o in wanted.items() if o == EARLIEST])
        latest = latest_offsets(cluster, [tp for tp, o in wanted.items() if o == LATEST], isolation)
        return {tp: earliest.get(tp, latest.get(tp, o)) if o < 0 else o for tp, o in wanted.items()}
    if spec.kind == "timestamps":
        _require_all(spec.timestamps, tps,
                     "startingOffsetsByTimestamp" if is_start else "endingOffsetsByTimestamp")
        timestamps = {tp: spec.timestamps[tp] for tp in tps}
    else:
        assert spec.timestamp is not None
        timestamps = dict.fromkeys(tps, spec.timestamp)
    found = offsets_for_times(cluster, timestamps, isolation)
    missing = [tp for tp, o in found.items() if o is None]
    if missing and is_start and no_match == "error":
        tp = missing[0]
        raise NoOffsetForTimestampError(
            f"No offset matched from request of topic-partition {tp} and timestamp {timestamps[tp]}; "
            "set startingOffsetsByTimestampStrategy=latest to start such partitions at their latest offset")
    # An end (or a start under strategy 'latest') with no record at or after the timestamp is the end.
    latest = latest_offsets(cluster, missing, isolation) if missing else {}
    return {tp: latest[tp] if o is None else o for tp, o in found.items()}


def _require_all(given: Mapping[TopicPartition, int], tps: Iterable[TopicPartition], option: str) -> None:
    absent = [tp for tp in tps if tp not in given]
    if absent:
        raise ConfigError(
            f"option {option!r} must give every selected topic-partition (use -2 for earliest, -1 for latest); "
            f"missing: {', '.join(map(str, absent[:10]))}")


def plan_batch(options: SourceOptions) -> list[OffsetRange]:
    """Offset ranges of a batch read, one per task, with the leader of each as a hint."""
    with Cluster(options.kafka) as cluster:
        tps = resolve_partitions(cluster, options)
        isolation = cluster.config.isolation_level
        starts = resolve_offsets(cluster, options.starting, tps, isolation, True, options.no_match_strategy)
        ends = resolve_offsets(cluster, options.ending, tps, isolation, False, options.no_match_strategy)
        ranges = []
        for tp in tps:
            start, end = starts[tp], ends[tp]
            if start > end:
                raise ConfigError(f"{tp}: the starting offset {start} is after the ending offset {end}")
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end, cluster.leader(tp).leader))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)

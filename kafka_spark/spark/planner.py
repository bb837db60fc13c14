"""Driver-side planning of a batch read: partitions, start and end offsets, and the split into tasks."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.offsets import earliest_offsets, latest_offsets, list_offsets
from kafka_spark.errors import ConfigError, DataLossError, KafkaSparkError
from kafka_spark.offsets.ranges import EARLIEST, LATEST, OffsetRange, split_ranges
from kafka_spark.spark.options import OffsetSpec, SourceOptions

log = logging.getLogger(__name__)


class NoOffsetForTimestampError(KafkaSparkError):
    """No record at or after the requested start timestamp, and the strategy is 'error'."""


def resolve_partitions(cluster: Cluster, options: SourceOptions) -> list[TopicPartition]:
    """The topic-partitions the options select, in order; unknown topics are a typed error."""
    if options.assign:
        # Like Spark, an assigned partition the topic does not have is left out, not an error.
        topics = {tp.topic for tp in options.assign}
        existing = {tp for topic in topics for tp in cluster.partitions(topic)}
        tps = sorted({TopicPartition(t, p) for t, p in options.assign})
        absent = [tp for tp in tps if tp not in existing]
        if absent:
            log.warning("assign: %s do not exist and are not read", ", ".join(map(str, absent)))
        return [tp for tp in tps if tp in existing]
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
    # Like Spark, hand every value to ListOffsets as is: Kafka reads the negative ones as its own
    # sentinels (-2 earliest, -1 latest, -3 the record with the largest timestamp).
    listed = list_offsets(cluster, timestamps, isolation)
    found = {tp: r.offset if r.offset >= 0 else None for tp, r in listed.items()}
    missing = [tp for tp in tps if found[tp] is None]
    if missing and is_start and no_match == "error":
        tp = missing[0]
        raise NoOffsetForTimestampError(
            f"No offset matched from request of topic-partition {tp} and timestamp {timestamps[tp]}; "
            "set startingOffsetsByTimestampStrategy=latest to start such partitions at their latest offset")
    # An end (or a start under strategy 'latest') with no record at or after the timestamp is the end.
    latest = latest_offsets(cluster, missing, isolation) if missing else {}
    return {tp: latest[tp] if found[tp] is None else found[tp] for tp in tps}


def _require_all(given: Mapping[TopicPartition, int], tps: Iterable[TopicPartition], option: str) -> None:
    selected = set(tps)
    absent = sorted(selected - set(given))
    if absent:
        raise ConfigError(
            f"option {option!r} must give every selected topic-partition (use -2 for earliest, -1 for latest); "
            f"missing: {', '.join(map(str, absent[:10]))}")
    extra = sorted(set(given) - selected)
    if extra:
        raise ConfigError(
            f"option {option!r} names topic-partitions that the query does not read: "
            f"{', '.join(map(str, extra[:10]))}; it must give exactly the selected ones")


def _past_the_end(ranges: dict[TopicPartition, tuple[int, int]], high_watermarks: Mapping[TopicPartition, int],
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
        tps = resolve_partitions(cluster, options)
        isolation = cluster.config.isolation_level
        starts = resolve_offsets(cluster, options.starting, tps, isolation, True, options.no_match_strategy)
        ends = resolve_offsets(cluster, options.ending, tps, isolation, False, options.no_match_strategy)
        bounds = {tp: (starts[tp], ends[tp]) for tp in tps}
        if options.ending.kind == "offsets":
            _past_the_end(bounds, latest_offsets(cluster, tps, "read_uncommitted"), options.fail_on_data_loss)
        ranges = []
        for tp, (start, end) in bounds.items():
            if start > end:
                raise ConfigError(f"{tp}: the starting offset {start} is after the ending offset {end}")
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end, cluster.leader(tp).leader))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)

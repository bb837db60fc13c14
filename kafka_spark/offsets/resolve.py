"""Turning a topic selection and a start/end specification into concrete offsets, against a live cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.offsets import earliest_offsets, latest_offsets, offsets_for_times
from kafka_spark.errors import ConfigError, KafkaSparkError
from kafka_spark.offsets.ranges import EARLIEST, LATEST


class NoOffsetForTimestampError(KafkaSparkError):
    """No record at or after the requested start timestamp, and the strategy is 'error'."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: earliest, latest, exact offsets, per-partition or global timestamps."""

    kind: Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    timestamps: dict[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


EARLIEST_SPEC = OffsetSpec("earliest")
LATEST_SPEC = OffsetSpec("latest")


def resolve_partitions(cluster: Cluster, subscribe: Sequence[str] = (), pattern: str | None = None,
                       assign: Sequence[tuple[str, int]] = ()) -> list[TopicPartition]:
    """The topic-partitions a selection names, in order; unknown topics are a typed error."""
    if assign:
        tps = [TopicPartition(t, p) for t, p in assign]
        cluster.topics({tp.topic for tp in tps})
        for tp in tps:
            cluster.leader(tp)  # raises UnknownTopicError for a partition the topic does not have
        return sorted(tps)
    topics = cluster.matching_topics(pattern) if pattern else list(subscribe)
    return sorted(tp for topic in topics for tp in cluster.partitions(topic))


def resolve_offsets(cluster: Cluster, spec: OffsetSpec, tps: list[TopicPartition], isolation: str,
                    is_start: bool, no_match: str = "error") -> dict[TopicPartition, int]:
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

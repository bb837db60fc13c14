"""Turning a topic selection and a start/end specification into concrete offsets, against a live cluster
or any other `OffsetLookup` (a broker's files, for pykafka-log)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets, list_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError, KafkaSparkError
from kafka_spark.offsets.ranges import EARLIEST, EARLIEST_SPEC, LATEST, LATEST_SPEC, OffsetSpec

log = logging.getLogger(__name__)

__all__ = ["EARLIEST_SPEC", "LATEST_SPEC", "NoOffsetForTimestampError", "OffsetLookup", "OffsetSpec",
           "leader_hints", "pick_partitions", "resolve_offsets", "resolve_partitions", "resolve_spec"]


class NoOffsetForTimestampError(KafkaSparkError):
    """No record at or after the requested start timestamp, and the strategy is 'error'."""


class OffsetLookup(Protocol):
    """Where concrete offsets come from."""

    def earliest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]: ...

    def latest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]: ...

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset with a timestamp at or after each one (None: there is none), Kafka's
        ListOffsets semantics, negative sentinels included."""
        ...


class _ClusterOffsets:
    """`OffsetLookup` of a live cluster, at one isolation level."""

    def __init__(self, cluster: Cluster, isolation: str) -> None:
        self.cluster = cluster
        self.isolation = isolation

    def earliest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return earliest_offsets(self.cluster, tps)

    def latest(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return latest_offsets(self.cluster, tps, self.isolation)

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        # Like Spark, hand every value to ListOffsets as is: Kafka reads the negative ones as its own
        # sentinels (-2 earliest, -1 latest, -3 the record with the largest timestamp).
        listed = list_offsets(self.cluster, dict(timestamps), self.isolation)
        return {tp: r.offset if r.offset >= 0 else None for tp, r in listed.items()}


def resolve_partitions(cluster: Cluster, subscribe: Sequence[str] = (), pattern: str | None = None,
                       assign: Sequence[tuple[str, int]] = ()) -> list[TopicPartition]:
    """The topic-partitions a selection names, in order; unknown subscribed topics are a typed error."""
    return pick_partitions(cluster.partitions, cluster.matching_topics, subscribe, pattern, assign)


def pick_partitions(partitions_of: Callable[[str], list[TopicPartition]], matching: Callable[[str], list[str]],
                    subscribe: Sequence[str] = (), pattern: str | None = None,
                    assign: Sequence[tuple[str, int]] = ()) -> list[TopicPartition]:
    """`resolve_partitions` over any source of topics: `partitions_of(topic)` raises for an unknown
    topic, `matching(pattern)` lists the topics a pattern finds."""
    if assign:
        # Like Spark, an assigned partition the topic does not have is left out, not an error.
        assigned = {t for t, _ in assign}
        existing = {tp for topic in assigned for tp in partitions_of(topic)}
        tps = sorted({TopicPartition(t, p) for t, p in assign})
        absent = [tp for tp in tps if tp not in existing]
        if absent:
            log.warning("assign: %s do not exist and are not read", ", ".join(map(str, absent)))
        return [tp for tp in tps if tp in existing]
    topics = matching(pattern) if pattern else list(subscribe)
    return sorted(tp for topic in topics for tp in partitions_of(topic))


def leader_hints(cluster: Cluster, tps: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
    """The broker id leading each partition, where known: a hint of where to read it, never required."""
    try:
        return {tp: leader for leader, group in cluster.group_by_leader(list(tps)).items() for tp in group}
    except Exception:  # only a hint: each task finds its leader itself
        return {}


def resolve_offsets(cluster: Cluster, spec: OffsetSpec, tps: list[TopicPartition], isolation: str,
                    is_start: bool, no_match: str = "error") -> dict[TopicPartition, int]:
    """Concrete offsets for `spec` over `tps`, following Spark's rules for sentinels and timestamps."""
    return resolve_spec(_ClusterOffsets(cluster, isolation), spec, tps, is_start, no_match)


def resolve_spec(lookup: OffsetLookup, spec: OffsetSpec, tps: list[TopicPartition], is_start: bool,
                 no_match: str = "error") -> dict[TopicPartition, int]:
    """`resolve_offsets` over any `OffsetLookup`."""
    if not tps:
        return {}
    if spec.kind == "earliest":
        return lookup.earliest(tps)
    if spec.kind == "latest":
        return lookup.latest(tps)
    if spec.kind == "offsets":
        _require_all(spec.offsets, tps, "startingOffsets" if is_start else "endingOffsets")
        wanted = {tp: spec.offsets[tp] for tp in tps}
        earliest = lookup.earliest([tp for tp, o in wanted.items() if o == EARLIEST])
        latest = lookup.latest([tp for tp, o in wanted.items() if o == LATEST])
        return {tp: earliest.get(tp, latest.get(tp, o)) if o < 0 else o for tp, o in wanted.items()}
    if spec.kind == "timestamps":
        _require_all(spec.timestamps, tps,
                     "startingOffsetsByTimestamp" if is_start else "endingOffsetsByTimestamp")
        timestamps = {tp: spec.timestamps[tp] for tp in tps}
    else:
        assert spec.timestamp is not None
        timestamps = dict.fromkeys(tps, spec.timestamp)
    found = lookup.for_times(timestamps)
    missing = [tp for tp in tps if found[tp] is None]
    if missing and is_start and no_match == "error":
        tp = missing[0]
        raise NoOffsetForTimestampError(
            f"No offset matched from request of topic-partition {tp} and timestamp {timestamps[tp]}; "
            "set startingOffsetsByTimestampStrategy=latest to start such partitions at their latest offset")
    # An end (or a start under strategy 'latest') with no record at or after the timestamp is the end.
    latest = lookup.latest(missing) if missing else {}
    return {tp: latest[tp] if (offset := found[tp]) is None else offset for tp in tps}


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

"""Offset ranges per topic-partition, Spark's offsets JSON (`{"topic": {"0": 42}}`), and range splitting."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError

# Spark's sentinels inside offsets JSON.
LATEST = -1
EARLIEST = -2


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one partition; `leader` is a hint of the broker id that serves it."""

    topic: str
    partition: int
    start: int
    end: int
    leader: int | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        """Offsets covered; the record count can be lower (compaction, transaction markers)."""
        return self.end - self.start


# Splitting keeps the class of the ranges (dataclasses.replace), so subclasses come back as themselves.
_Range = TypeVar("_Range", bound=OffsetRange)


def offsets_from_json(text: str, option: str) -> dict[TopicPartition, int]:
    """Parse `{"topic": {"0": 23, "1": -1}}`; errors name `option` and show the expected form."""
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        out: dict[TopicPartition, int] = {}
        for topic, parts in raw.items():
            if not isinstance(parts, dict):
                raise ValueError(f"topic {topic!r} does not map to an object")
            for p, off in parts.items():
                if isinstance(off, bool) or not isinstance(off, int):
                    raise ValueError(f"{topic}-{p} has a non-integer value {off!r}")
                out[TopicPartition(topic, int(p))] = off
        return out
    except ValueError as exc:
        raise ConfigError(
            f"option {option!r}: expected JSON like {{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}}, "
            f"got {text!r} ({exc})"
        ) from None


def offsets_to_dict(offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]
                    ) -> dict[str, dict[str, int]]:
    """Spark's offsets form `{"topic": {"0": 42}}`, topics and partitions in sorted order."""
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), off in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = off
    return nested


def offsets_to_json(offsets: Mapping[TopicPartition, int] | Mapping[tuple[str, int], int]) -> str:
    """Spark's offsets JSON, topics and partitions in sorted order."""
    return json.dumps(offsets_to_dict(offsets), separators=(",", ":"))


def ranges_to_json(ranges: Iterable[OffsetRange]) -> str:
    """`[["topic", partition, start, end, leader], ...]`: ranges as a planner resolved them (leader may be null)."""
    return json.dumps([[r.topic, r.partition, r.start, r.end, r.leader] for r in ranges], separators=(",", ":"))


def ranges_from_json(text: str, option: str) -> list[OffsetRange]:
    """Parse `ranges_to_json`'s form; errors name `option`."""
    try:
        raw = json.loads(text)
        if not isinstance(raw, list):
            raise ValueError("not a list")
        out = []
        for item in raw:
            topic, partition, start, end, leader = item
            numbers = (partition, start, end) if leader is None else (partition, start, end, leader)
            if not isinstance(topic, str) or any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
                raise ValueError(f"{item!r} is not [topic, partition, start, end, leader]")
            if not 0 <= start <= end:
                raise ValueError(f"{item!r} does not go from an offset to one at or after it")
            out.append(OffsetRange(topic, partition, start, end, leader))
        return out
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"option {option!r}: expected JSON like [[\"topicA\",0,10,20,1]], got {text[:200]!r} "
                          f"({exc})") from None


def split_ranges(ranges: Iterable[_Range], min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[_Range]:
    """Split ranges into tasks the way Spark's Kafka source does; empty ranges are dropped.

    Ranges over `max_records_per_partition` are cut into equal parts first. Then, if fewer ranges
    than `min_partitions` remain, the larger ones are split in proportion to their size.
    """
    out = [r for r in ranges if r.size > 0]
    if max_records_per_partition:
        out = [piece for r in out for piece in _cut(r, math.ceil(r.size / max_records_per_partition))]
    if not min_partitions or len(out) >= min_partitions:
        return out
    total = sum(r.size for r in out)
    unsplit = [r for r in out if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    unsplit_set = set(unsplit)
    result: list[_Range] = []
    for r in out:
        parts = 1 if r in unsplit_set else _part_count(r.size, split_total, split_min)
        result.extend(_cut(r, parts))
    return [r for r in result if r.size > 0]


def split_batch_ranges(ranges: list[OffsetRange], starting: OffsetSpec, ending: OffsetSpec,
                       min_partitions: int | None = None,
                       max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The tasks of a batch read, as Spark's batch source decides whether to split at all.

    Spark judges the ranges before resolving `earliest`/`latest` (-2/-1 stay symbolic, so such a range
    counts as 1 record): it splits only when `minPartitions` exceeds the partitions or an unresolved
    range exceeds `maxRecordsPerPartition`. Otherwise each partition is one task, empty ones included.
    """
    def unresolved(spec: OffsetSpec, r: OffsetRange, resolved: int) -> int:
        tp = TopicPartition(r.topic, r.partition)
        if spec.kind in ("earliest", "latest"):
            return EARLIEST if spec.kind == "earliest" else LATEST
        return spec.offsets.get(tp, resolved) if spec.kind == "offsets" else resolved

    sizes = [unresolved(ending, r, r.end) - unresolved(starting, r, r.start) for r in ranges]
    if (min_partitions and min_partitions > len(ranges)) or (
            max_records_per_partition and any(size > max_records_per_partition for size in sizes)):
        return split_ranges(ranges, min_partitions, max_records_per_partition)
    return list(ranges)


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Java's Math.round: half rounds up.
    return max(math.floor(size / total * min_parts + 0.5), 1)


def _cut(r: _Range, parts: int) -> list[_Range]:
    if parts <= 1:
        return [r]
    pieces: list[_Range] = []
    remaining, start = r.size, r.start
    for i in range(parts):
        this = remaining // (parts - i)
        remaining -= this
        end = min(start + this, r.end)
        pieces.append(replace(r, start=start, end=end))
        start = end
    return pieces


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: earliest, latest, exact offsets, per-partition or global timestamps."""

    kind: Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    timestamps: dict[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


EARLIEST_SPEC = OffsetSpec("earliest")
LATEST_SPEC = OffsetSpec("latest")


def scala_set(tps) -> str:
    """Partitions as Spark prints a Scala set of them (its error parameters use `Set.toString`)."""
    return _scala("Set", [str(tp) for tp in sorted(tps)])


def scala_map(offsets: Mapping[TopicPartition, int]) -> str:
    """Offsets as Spark prints a Scala map of them (`Map.toString`)."""
    return _scala("Map", [f"{tp} -> {off}" for tp, off in sorted(offsets.items())])


def _scala(kind: str, items: list[str]) -> str:
    # Scala's immutable collections of up to 4 elements print as Set(..)/Map(..), larger ones as Hash*.
    return f"{kind if len(items) <= 4 else 'Hash' + kind}({', '.join(items)})"

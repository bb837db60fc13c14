"""Planning one batch of a load: from the table's committed offsets to the brokers' latest, capped.

The plan is made once: its ranges go to the `pykafka` reader as they are (`ranges`), and the cap is
the stream's `maxOffsetsPerTrigger` division, filled to the cap exactly (`offsets.admission`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError, DataLossError
from kafka_spark.offsets.admission import rate_limit
from kafka_spark.offsets.ranges import OffsetRange, offsets_to_json
from kafka_spark.offsets.resolve import (
    EARLIEST_SPEC,
    LATEST_SPEC,
    OffsetSpec,
    leader_hints,
    resolve_offsets,
    resolve_partitions,
)
from kafka_spark.offsets.zookeeper_group import resolve_starts
from kafka_spark.sink.errors import ConcurrentWriterError, OffsetsMovedBackwardsError
from kafka_spark.sink.position import SinkCommit


@dataclass
class BatchPlan:
    """The offsets one batch reads: [start, end) per topic-partition, plus offsets carried unchanged.

    `leaders` are the broker ids leading the partitions read, where known (a hint for the tasks).
    """

    batch: int
    start: dict[TopicPartition, int]
    end: dict[TopicPartition, int]
    carried: dict[TopicPartition, int] = field(default_factory=dict)
    lost: dict[TopicPartition, int] = field(default_factory=dict)
    new_partitions: list[TopicPartition] = field(default_factory=list)
    leaders: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Offsets to read (records can be fewer: transaction markers, compaction)."""
        return sum(self.end[tp] - self.start[tp] for tp in self.start)

    @property
    def reading(self) -> list[TopicPartition]:
        return sorted(tp for tp in self.start if self.end[tp] > self.start[tp])

    def ranges(self) -> list[OffsetRange]:
        """The ranges to read, one task each."""
        return [OffsetRange(tp.topic, tp.partition, self.start[tp], self.end[tp], self.leaders.get(tp))
                for tp in self.reading]

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """The position after this batch: every partition read, and every one carried over."""
        return {**self.carried, **self.end}


def merged_plan(plans: Sequence[BatchPlan]) -> BatchPlan:
    """One plan reading every range of `plans` (of different partitions), for a read shared by their tables."""
    merged = BatchPlan(batch=0, start={}, end={})
    for plan in plans:
        merged.start.update(plan.start)
        merged.end.update(plan.end)
        merged.leaders.update(plan.leaders)
    return merged


def placed_offsets(starts: dict[TopicPartition, int], beginnings: dict[TopicPartition, int]) -> str:
    """The `startingOffsets` that place a new query at `starts`: "earliest" when every start is its partition's
    beginning (specific offsets must name every selected partition when Spark resolves them, so a partition
    created before the first trigger would fail the query; "earliest" has no such window), else the offsets."""
    if all(tp in beginnings and off == beginnings[tp] for tp, off in starts.items()):
        return "earliest"
    return offsets_to_json(starts)


def starting_spec(starting: str | int) -> OffsetSpec:
    """`earliest`, `latest` or a timestamp in epoch milliseconds, for partitions new to the table."""
    if isinstance(starting, int) or str(starting).strip().isdigit():
        if int(starting) < 0:
            raise ConfigError(f"a starting timestamp is epoch milliseconds (>= 0), got {starting}")
        return OffsetSpec("timestamp", timestamp=int(starting))
    text = str(starting).strip().lower()
    if text == "earliest":
        return EARLIEST_SPEC
    if text == "latest":
        return LATEST_SPEC
    raise ConfigError(f"starting offsets must be 'earliest', 'latest' or epoch milliseconds, got {starting!r}")


def selected_partitions(cluster: Cluster, others: Sequence[SinkCommit], topics: Sequence[str],
                        pattern: str | None) -> list[TopicPartition]:
    """The partitions a sink reads; those that other sinks of the table own are refused."""
    tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
    if not tps:
        raise ConfigError(f"no topic matches {pattern!r}" if pattern else "no topics to load")
    refuse_shared(others, tps)
    return tps


def refuse_shared(others: Sequence[SinkCommit], tps: Sequence[TopicPartition]) -> None:
    """ConcurrentWriterError when another sink of the table already holds one of `tps`."""
    for other in others:
        shared = sorted(set(other.offsets) & set(tps))
        if shared:
            raise ConcurrentWriterError(
                f"{', '.join(map(str, shared[:5]))} already loaded into this table by sink {other.sink_id!r}; "
                "one table holds each topic-partition from one sink only (use that sink id, or another table)")


def first_starts(cluster: Cluster, starting: str | int, tps: Sequence[TopicPartition],
                 zookeeper_group: str | None = None, fail_on_data_loss: bool = True) -> dict[TopicPartition, int]:
    """Where a sink new to the table starts: `starting`, or `zookeeper_group`'s offsets where it has them."""
    return resolve_starts(cluster, starting_spec(starting), tps, "latest", zookeeper_group, fail_on_data_loss)


def checked_start(tp: TopicPartition, pos: int, latest: int, earliest: int, fail_on_data_loss: bool) -> int:
    """Where a partition the table holds up to `pos` resumes: `pos`, or past records deleted before they were
    loaded (without `fail_on_data_loss`); a `pos` past the broker's latest offset is refused."""
    if pos > latest:
        raise OffsetsMovedBackwardsError(
            f"{tp}: the table has loaded offsets up to {pos}, but the broker's latest offset is {latest}; "
            "the topic was recreated or truncated. Loading would silently skip or duplicate records: "
            "load into a new table or with a new sink id.")
    if pos < earliest:
        if fail_on_data_loss:
            raise DataLossError(
                f"{tp}: offsets {pos}..{earliest - 1} were deleted (retention) before they were loaded; "
                "set failOnDataLoss=false to skip them")
        return earliest
    return pos


def plan_batch(cluster: Cluster, previous: SinkCommit | None, others: Sequence[SinkCommit],
               topics: Sequence[str], pattern: str | None, starting: str | int,
               max_records: int | None, fail_on_data_loss: bool,
               zookeeper_group: str | None = None) -> BatchPlan:
    """The next batch after `previous`; partitions other sinks of the table own are refused.

    A sink new to the table starts at `starting`, or where `zookeeper_group` (an old consumer group) stands.
    """
    tps = selected_partitions(cluster, others, topics, pattern)
    isolation = cluster.config.isolation_level
    latest = latest_offsets(cluster, tps, isolation)
    earliest = earliest_offsets(cluster, tps)
    committed = previous.offsets if previous else {}
    new = [tp for tp in tps if tp not in committed]
    # A brand-new table starts where asked; partitions added to a topic later start at their beginning,
    # as Spark's Kafka source does, so none of their records is missed.
    if previous is None:
        new_starts = first_starts(cluster, starting, new, zookeeper_group, fail_on_data_loss)
    else:
        new_starts = resolve_offsets(cluster, EARLIEST_SPEC, new, isolation, is_start=True) if new else {}
    start: dict[TopicPartition, int] = {}
    lost: dict[TopicPartition, int] = {}
    for tp in tps:
        if tp in new_starts:
            start[tp] = new_starts[tp]
            continue
        start[tp] = checked_start(tp, committed[tp], latest[tp], earliest[tp], fail_on_data_loss)
        if start[tp] > committed[tp]:
            lost[tp] = start[tp] - committed[tp]
    # A start past the latest offset (a group's position inside an open transaction) reads nothing.
    reachable = {tp: max(latest[tp], start[tp]) for tp in start}
    end = rate_limit(max_records, start, reachable, exact=True) if max_records else reachable
    carried = {tp: off for tp, off in committed.items() if tp not in start}
    reading = [tp for tp in start if end[tp] > start[tp]]
    return BatchPlan(batch=previous.batch + 1 if previous else 0, start=start, end=end, carried=carried,
                     lost=lost, new_partitions=new if previous else [], leaders=leader_hints(cluster, reading))

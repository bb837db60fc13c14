"""`spark.readStream.format("pykafka")`: the micro-batch reader, with Spark's admission control.

The reader lives in Spark's long-lived driver-side Python process, so the latest offsets seen, the
AvailableNow snapshot and the `maxTriggerDelay` timer are plain attributes; `read()` runs on
executors from a pickled copy and needs only the options and the task's range.

Batch 0 and restarts: Spark's JVM source persists its initial offsets in the checkpoint, and a
Python source cannot write there; the engine calls `initialOffset()` again when it replays an
uncommitted batch 0. Offsets resolved from "latest" (the `latest` option, `-1` in JSON, a
timestamp with no record after it) would then differ. So such partitions stay at their initial
offset in batch 0: its logged end offset is the initial offset itself, later batches start from
the offset log, and a replayed batch 0 reads nothing of those partitions whatever `latest` is now.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError, KafkaSparkError
from kafka_spark.offsets.admission import TriggerGate, behind_latest, rate_limit
from kafka_spark.offsets.ranges import offsets_to_dict, offsets_to_json, scala_map, scala_set
from kafka_spark.spark.source.options import SourceOptions
from kafka_spark.spark.source.partition import KafkaInputPartition

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.cluster import Cluster

log = logging.getLogger(__name__)

OffsetMap = dict[TopicPartition, int]


class AvailableNowError(KafkaSparkError):
    """Spark's checks of a Trigger.AvailableNow batch against the offsets captured at its start."""

    def __init__(self, condition: str, message: str) -> None:
        self.condition = condition
        super().__init__(f"[{condition}] {message}")


def from_offset_dict(offset: Mapping[str, Mapping[str, Any]] | None) -> OffsetMap:
    if not offset:
        return {}
    return {TopicPartition(t, int(p)): int(o) for t, parts in offset.items() for p, o in parts.items()}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches on the driver with Spark's Kafka-source rules; tasks read as in batch."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._cluster: Cluster | None = None
        self._initial: OffsetMap | None = None
        self._anchored: frozenset[TopicPartition] = frozenset()
        # Set when initialOffset resolves: the next latestOffset / partitions call may be batch 0's.
        self._hold_latest = self._hold_plan = False
        self._latest: OffsetMap = {}
        self._consumed: OffsetMap = {}
        self._available_now = False
        self._snapshot: OffsetMap | None = None
        self._gate = (TriggerGate(options.min_offsets_per_trigger, options.max_trigger_delay_ms)
                      if options.min_offsets_per_trigger else None)

    # Spark pickles the reader for executors: only the options travel.
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["options"])

    def cluster(self) -> Cluster:
        from kafka_spark.client.cluster import Cluster

        if self._cluster is None:
            self._cluster = Cluster(self.options.kafka)
        return self._cluster

    def initialOffset(self) -> dict:
        # Spark asks twice in a query's first trigger (to plan batch 0, then to read it). Its own source
        # resolves the initial offsets once per query and answers the same every time after; so does this
        # reader: one metadata and offset lookup per query start, and the second answer cannot differ
        # from the one batch 0's end was planned from.
        if self._initial is None:
            self._initial = self._resolve_initial()
        return offsets_to_dict(self._initial)

    def _resolve_initial(self) -> OffsetMap:
        from kafka_spark.offsets.zookeeper_group import resolve_starts
        from kafka_spark.spark.source.stream_planner import fetch_latest, selected_partitions

        cluster = self.cluster()
        spec = self.options.starting
        tps = selected_partitions(cluster, self.options)
        if spec.kind == "offsets" and set(spec.offsets) != set(tps):
            raise ConfigError(
                "If startingOffsets contains specific offsets, you must specify all TopicPartitions. Use -1 for "
                "latest, -2 for earliest. Specified: "
                f"{sorted(map(str, spec.offsets))} Assigned: {sorted(map(str, tps))}")
        initial = resolve_starts(cluster, spec, tps, self.options.no_match_strategy, self.options.zookeeper_group,
                                 self.options.fail_on_data_loss)
        # Which partitions were placed at "latest", the one answer that moves between two calls.
        if spec.kind == "latest":
            anchored = set(tps)
        elif spec.kind == "offsets":
            anchored = {tp for tp, off in spec.offsets.items() if off == -1}
        elif spec.kind in ("timestamp", "timestamps"):
            latest = fetch_latest(cluster, self.options)
            anchored = {tp for tp in tps if initial[tp] >= latest.get(tp, initial[tp])}
        else:
            anchored = set()
        self._anchored = frozenset(anchored)
        self._hold_latest = self._hold_plan = bool(anchored)
        log.info("initial offsets %s (held in batch 0: %d partitions)", offsets_to_json(initial), len(anchored))
        return initial

    def getDefaultReadLimit(self) -> ReadLimit:
        # PySpark has no composite limit: the options are applied in latestOffset whatever is passed,
        # except ReadAllAvailable (Trigger.Once), which ignores them.
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # The snapshot is taken at the first latestOffset, not here: a replayed batch never calls
        # latestOffset, so partitions that changed meanwhile cannot fail the restart (SPARK-53560).
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        from kafka_spark.client.fetch.offsets import earliest_offsets
        from kafka_spark.spark.source.stream_planner import fetch_latest

        begin = from_offset_dict(start)
        if self._available_now:
            if self._snapshot is None:
                self._snapshot = fetch_latest(self.cluster(), self.options, begin)
                log.info("Trigger.AvailableNow: reading up to %s", offsets_to_json(self._snapshot))
            latest = dict(self._snapshot)
        else:
            latest = fetch_latest(self.cluster(), self.options, begin)
        self._latest = latest
        hold, self._hold_latest = self._hold_latest, False
        if hold and begin == self._initial:
            latest = {tp: begin[tp] if tp in self._anchored and tp in begin else off for tp, off in latest.items()}
        if isinstance(limit, ReadAllAvailable):
            end = latest
        elif self._gate is not None and self._gate.delay(begin, latest):
            return start
        elif self.options.max_offsets_per_trigger:
            end = rate_limit(self.options.max_offsets_per_trigger, begin, latest,
                             lambda tps: earliest_offsets(self.cluster(), tps))
        else:
            end = latest
        # "No new data" is the start returned as is; Spark forbids an empty offset ({}) in its log.
        return offsets_to_dict(end) if end else start

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_dict(self._latest) if self._latest else None

    def metrics(self) -> dict[str, str]:
        """Spark's `{min,max,avg}OffsetsBehindLatest` for the last batch planned (PySpark cannot report them)."""
        return behind_latest(self._latest, self._consumed)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        from kafka_spark.spark.source.stream_planner import plan_micro_batch

        begin, until = from_offset_dict(start), from_offset_dict(end)
        if self._snapshot is not None:
            self._verify_available_now(until)
        hold, self._hold_plan = self._hold_plan, False
        if hold and begin == self._initial:
            # Batch 0 (or its replay): held partitions read nothing (see the module docstring).
            begin = {tp: until[tp] if tp in self._anchored and tp in until else off for tp, off in begin.items()}
        ranges = plan_micro_batch(self.cluster(), self.options, begin, until)
        self._consumed = until
        return [KafkaInputPartition(r) for r in ranges]

    def _verify_available_now(self, end: OffsetMap) -> None:
        from kafka_spark.spark.source.stream_planner import fetch_latest

        snapshot = self._snapshot or {}
        if set(end) != set(snapshot):
            raise AvailableNowError(
                "MISMATCHED_TOPIC_PARTITIONS_BETWEEN_END_OFFSET_AND_PREFETCHED",
                "Kafka data source in Trigger.AvailableNow should provide the same topic partitions in pre-fetched "
                "offset to end offset for each microbatch. The error could be transient - restart your query, and "
                f"report if you still see the same issue.\ntopic-partitions for pre-fetched offset: "
                f"{scala_set(snapshot)}, topic-partitions for end offset: {scala_set(end)}.")
        over = {tp: off for tp, off in end.items() if off > snapshot[tp]}
        if over:
            raise AvailableNowError(
                "END_OFFSET_HAS_GREATER_OFFSET_FOR_TOPIC_PARTITION_THAN_PREFETCHED",
                "For Kafka data source with Trigger.AvailableNow, end offset should have lower or equal offset per "
                "each topic partition than pre-fetched offset. The error could be transient - restart your query, "
                "and report if you still see the same issue.\n"
                f"pre-fetched offset: {scala_map(snapshot)}, end offset: {scala_map(end)}.")
        latest = fetch_latest(self.cluster(), self.options)
        if not set(end) <= set(latest):
            raise AvailableNowError(
                "LOST_TOPIC_PARTITIONS_IN_END_OFFSET_WITH_TRIGGER_AVAILABLENOW",
                "Some of partitions in Kafka topic(s) have been lost during running query with Trigger.AvailableNow. "
                "The error could be transient - restart your query, and report if you still see the same issue.\n"
                f"topic-partitions for latest offset: {scala_set(latest)}, topic-partitions for end offset: "
                f"{scala_set(end)}")
        if any(off > latest[tp] for tp, off in end.items()):
            raise AvailableNowError(
                "END_OFFSET_HAS_GREATER_OFFSET_FOR_TOPIC_PARTITION_THAN_LATEST_WITH_TRIGGER_AVAILABLENOW",
                "Some of partitions in Kafka topic(s) report available offset which is less than end offset during "
                "running query with Trigger.AvailableNow. The error could be transient - restart your query, and "
                "report if you still see the same issue.\n"
                f"latest offset: {scala_map(latest)}, end offset: {scala_map(end)}")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_spark.spark.source.reader import read_range

        if not isinstance(partition, KafkaInputPartition):
            return
        from kafka_spark.client.errors import OffsetOutOfRangeDataLoss
        from kafka_spark.spark.source.stream_planner import StreamDataLossError

        r = partition.range
        try:
            yield from read_range(self.options, r)
        except OffsetOutOfRangeDataLoss as e:  # raised only with failOnDataLoss=true
            # Spark's condition and wording for a task whose offsets are gone; the group is the
            # user's kafka.group.id (Spark prints "null" without one), the broker's answer the cause.
            group = self.options.kafka.get("group.id", "null")
            raise StreamDataLossError(
                "COULD_NOT_READ_OFFSET_RANGE",
                f"Could not read records in offset [{r.start}, {r.end}) for topic partition {r.topic}-{r.partition}"
                f"\nwith consumer group {group}.") from e

    def commit(self, end: dict) -> None:
        if not self.options.commit_offsets_to_kafka:
            return
        from kafka_spark.client.groups.admin import GroupAdmin

        group = self.options.kafka["group.id"]
        offsets = from_offset_dict(end)
        GroupAdmin(self.cluster()).commit(group, offsets)
        log.info("committed offsets of %d partitions to consumer group %r", len(offsets), group)

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

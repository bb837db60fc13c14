"""Kafka -> Delta streams: each micro-batch's rows and end offsets in one Delta commit.

A Structured Streaming query reads `readStream.format("pykafka")` and writes every micro-batch with
`foreachBatch` through the same commit protocol as the batch load (`txnAppId` = the sink, `txnVersion`
= the sink's own batch number, `userMetadata` and kept offsets = the position). So:

- the batch number is read back from the table, never Spark's batchId: a lost checkpoint restarts
  batchId at 0, and Delta would skip every write as "already committed";
- a micro-batch Spark replays after a crash between the Delta commit and its own commit log ends at
  the table's committed offsets: it is recognised and not written again;
- a query whose checkpoint is gone starts from the table's committed offsets (passed as
  `startingOffsets`, which Spark uses only when the checkpoint has none), so nothing is lost or
  read twice; batch loads and streams of the same sink continue each other.

With the direct writer (`writer="direct"`, or "auto" where it serves the table) a micro-batch leaves
`foreachBatch`'s DataFrame unread and reads exactly its own offsets [start, end) with the direct write:
the end from the offset log, the start from the previous entry or, for micro-batch 0, from where
`start_stream` placed the query (explicit offsets, kept; a checkpoint that never committed a micro-batch
is started afresh for that). A partition whose start is unknown (new to the query) starts at its earliest
offset, as Spark reads a new partition.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.commit import write_commit
from kafka_spark.delta.dead_letter import check_options, reconcile
from kafka_spark.delta.direct import NEW_CATALOG_TABLE, WriterChoice, choose_writer
from kafka_spark.delta.direct_commit import write_direct
from kafka_spark.delta.location import TableLocation, locate, path_location
from kafka_spark.delta.position import committed_position, sink_positions
from kafka_spark.offsets.ranges import EARLIEST, offsets_to_json
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.offset_log import batch_end_offsets, fresh_checkpoint
from kafka_spark.sink.options import KafkaSource, StreamOptions, default_checkpoint, trigger_kwargs
from kafka_spark.sink.plan import BatchPlan, first_starts, placed_offsets, selected_partitions, starting_spec
from kafka_spark.sink.position import SinkCommit, check_sink_id, now_ms
from kafka_spark.sink.publish import check_publish_options, publish_committed
from kafka_spark.sink.read_plan import apply_transform
from kafka_spark.sink.results import LoadResult
from kafka_spark.spark.redaction import redact_secret_options

log = logging.getLogger(__name__)

Offsets = Mapping[TopicPartition, int]


class CheckpointMismatchError(SinkError):
    """The query's checkpoint and the table disagree on where the sink's stream stands."""


def starting_option(cluster: Cluster, source: KafkaSource, sink_id: str,
                    location: TableLocation | None) -> tuple[str, str]:
    """The source option that places the query: the table's position, or the user's start for a new sink."""
    previous, others = sink_positions(location, sink_id)
    tps = selected_partitions(cluster, others, source.topics, source.pattern)
    if previous is None and source.start_zookeeper_group:
        starts = first_starts(cluster, source.starting, tps, source.start_zookeeper_group, source.fail_on_data_loss)
        return "startingOffsets", offsets_to_json(starts)
    if previous is None:
        spec = starting_spec(source.starting)
        if spec.kind == "timestamp":
            return "startingTimestamp", str(spec.timestamp)
        return "startingOffsets", spec.kind
    # Spark needs every selected partition named; those new to the table start at their beginning.
    return "startingOffsets", offsets_to_json({tp: previous.offsets.get(tp, EARLIEST) for tp in tps})


def placed_start(spark, cluster: Cluster, source: KafkaSource, sink_id: str, location: TableLocation | None,
                 checkpoint: str) -> tuple[tuple[str, str], dict[TopicPartition, int] | None]:
    """For the direct writer: the source option that places the query and, when the checkpoint starts afresh,
    the offsets micro-batch 0 begins at (None: the checkpoint has committed micro-batches).

    Spark keeps a Python source's initial offsets nowhere, so a checkpoint that logged micro-batch 0 without
    committing it is deleted (it holds nothing the table does not) and the query placed again."""
    fresh = fresh_checkpoint(spark, checkpoint)
    if not fresh:
        return starting_option(cluster, source, sink_id, location), None
    previous, others = sink_positions(location, sink_id)
    tps = selected_partitions(cluster, others, source.topics, source.pattern)
    beginnings = earliest_offsets(cluster, tps)
    if previous is None:
        starts = first_starts(cluster, source.starting, tps, source.start_zookeeper_group, source.fail_on_data_loss)
    else:
        starts = {tp: previous.offsets.get(tp, beginnings[tp]) for tp in tps}
    return ("startingOffsets", placed_offsets(starts, beginnings)), starts


def start_stream(spark, options: StreamOptions):
    """Start the query (a `StreamingQuery`); every micro-batch is one Delta commit of rows and offsets (with
    `routing`, one per table: see multi_stream.py)."""
    if options.routing is not None:
        from kafka_spark.delta.sink import start_routed_stream

        return start_routed_stream(spark, options)
    source, target, parsing = options.source, options.target, options.parsing
    check_sink_id(target.sink_id)
    check_options(spark, target, parsing)
    check_publish_options(source, options.publishing)
    location = locate(target.table, spark)
    choice = choose_writer(spark, options, location)  # writer "direct" on a table it cannot serve fails here
    if parsing.dead_letter is not None:
        reconcile(spark, source, target, parsing, committed_position(location, target.sink_id) if location else None)
    # before the query clones the session's settings
    redact_secret_options(spark)
    if options.checkpoint is None and location is not None and location.name:
        options.checkpoint = default_checkpoint(location.path, target.sink_id)  # beside the catalog table
    initial = None
    with Cluster(source.kafka) as cluster:
        if choice.target is not None:
            starting, initial = placed_start(spark, cluster, source, target.sink_id, location,
                                             options.checkpoint_location)
        else:
            starting = starting_option(cluster, source, target.sink_id, location)
    selection = ("subscribePattern", source.pattern) if source.pattern else ("subscribe", ",".join(source.topics))
    # In this order, the later winning: the user's source options override all but the two flags.
    read = {**source.client_options(), starting[0]: starting[1], selection[0]: selection[1],
            **options.pacing.reader_options(), **source.read_flags()}
    df = spark.readStream.format("pykafka").options(**read).load()
    if location is None:
        # A catalog table new to the catalog is created from the query's output schema now, so that its
        # checkpoint can live beside it.
        fmt = options.format
        schema = apply_transform(df, fmt.transform).schema
        location = path_location(create_catalog_table(spark, target.table, schema, fmt.partition_by), spark,
                                 name=target.table)
    if options.checkpoint is None and location.name:
        options.checkpoint = default_checkpoint(location.path, target.sink_id)
    writer = MicroBatchWriter(spark, options, location, choice, initial)
    return (df.writeStream.foreachBatch(writer).option("checkpointLocation", options.checkpoint_location)
            .queryName(f"kafka-spark-{target.sink_id}").trigger(**trigger_kwargs(options.pacing.trigger)).start())


class MicroBatchWriter:
    """The `foreachBatch` function: one Delta commit per micro-batch, replays recognised and skipped.

    `choice` is the writer chosen when the query started (None: chosen at the next micro-batch); it is chosen
    again after a failed commit and after the commit that created the table. `initial`: where micro-batch 0
    begins, when the query was placed there (see `placed_start`)."""

    def __init__(self, spark, options: StreamOptions, location: TableLocation | None = None,
                 choice: WriterChoice | None = None, initial: Offsets | None = None) -> None:
        self.spark = spark
        self.options = options  # for its checkpoint, which start_stream may set, and on_commit
        self.source, self.target, self.parsing = options.source, options.target, options.parsing
        self.format, self.publishing = options.format, options.publishing
        self.location = location
        self.choice = choice
        self.initial = dict(initial) if initial is not None else None
        self.results: list[LoadResult] = []

    def __call__(self, df, batch_id: int) -> None:
        started = time.monotonic()
        target, checkpoint = self.target, self.options.checkpoint_location
        end = batch_end_offsets(self.spark, checkpoint, batch_id)
        if end is None:
            raise SinkError(f"{checkpoint}: micro-batch {batch_id} has no offset log entry")
        start = batch_end_offsets(self.spark, checkpoint, batch_id - 1) if batch_id > 0 else self.initial
        self.location = self.location or locate(target.table, self.spark)
        previous = committed_position(self.location, target.sink_id) if self.location else None
        reconcile(self.spark, self.source, target, self.parsing, previous)
        if previous is not None:
            if all(previous.offsets.get(tp) == off for tp, off in end.items()):
                log.warning("micro-batch %d of the query ends at the offsets the table already holds (batch %d "
                            "of sink %r): a replay after a crash; not written again", batch_id, previous.batch,
                            target.sink_id)
                # The crash may have come between the commit and its mirrors.
                publish_committed(self.publishing, previous.offsets)
                return
            self._check_continuity(previous, start, end, batch_id)
        batch = previous.batch + 1 if previous else 0
        carried = {tp: off for tp, off in (previous.offsets if previous else {}).items() if tp not in end}
        commit = SinkCommit(sink_id=target.sink_id, batch=batch, offsets={**carried, **end},
                            start_offsets=dict(start if start is not None else previous.offsets if previous else {}),
                            run_id=f"{uuid.uuid4().hex[:8]}-q{batch_id}", committed_at_ms=now_ms())
        result = self._write(df, batch_id, commit, start, end, previous)
        result.seconds = time.monotonic() - started
        publish_committed(self.publishing, result.offsets)
        self.results.append(result)
        if self.options.on_commit is not None:
            self.options.on_commit(batch_id, result)
        log.info("micro-batch %d: committed batch %d of sink %r (Delta version %s, %d rows)", batch_id, batch,
                 target.sink_id, result.table_version, result.rows)

    def _write(self, df, batch_id: int, commit: SinkCommit, start: Offsets | None, end: Offsets,
               previous: SinkCommit | None) -> LoadResult:
        """Commit the micro-batch with the query's writer: `df` through Spark's, or its offsets read again
        through the direct one."""
        choice = self._writer()
        try:
            if choice.target is None:
                result = write_commit(self.spark, self.target, self.format, self.parsing, df, commit,
                                      f"micro-batch {batch_id}", self.location)
            else:
                plan = self._own_plan(start, end, previous, commit.batch, batch_id)
                commit = dataclasses.replace(commit, start_offsets=dict(plan.start))
                result = write_direct(self.spark, self.options, plan, commit, choice.target)
                if choice.target.table is None:
                    self.choice = None  # the commit created the table: its snapshot is read next time
        except Exception:
            self.choice = None  # chosen again, from the table as it is then
            raise
        if result.writer_reason is None:  # else the direct writer left this batch to Spark's, saying why
            result.writer, result.writer_reason = choice.writer, choice.reason
        if choice.reason == NEW_CATALOG_TABLE:
            self.choice = None  # the table exists now: the next micro-batch may take the direct writer
        return result

    def _writer(self) -> WriterChoice:
        if self.choice is None:
            self.location = self.location or locate(self.target.table, self.spark)
            self.choice = choose_writer(self.spark, self.options, self.location)
        return self.choice

    def _own_plan(self, start: Offsets | None, end: Offsets, previous: SinkCommit | None, batch: int,
                  batch_id: int) -> BatchPlan:
        """The micro-batch's offsets [start, end), for the direct writer, which reads them itself: a partition
        begins where the offset log (or the query's placing) says, else at the table's position, else at its
        earliest offset (a partition new to the query, which Spark reads from its beginning)."""
        held = previous.offsets if previous is not None else {}
        begin: dict[TopicPartition, int] = {}
        for tp in end:
            if start is not None and tp in start:
                begin[tp] = start[tp]
            elif tp in held:
                begin[tp] = held[tp]
        # Only a start taken from the table can pass the end: the continuity check compared the others.
        ahead = sorted(tp for tp, b in begin.items() if b > end[tp])
        if ahead:
            detail = ", ".join(f"{tp}: table {begin[tp]}, micro-batch end {end[tp]}" for tp in ahead[:5])
            raise CheckpointMismatchError(
                f"micro-batch {batch_id} of {self.options.checkpoint_location} ends before the table "
                f"{self.target.table} for sink {self.target.sink_id!r} ({detail}); another writer moved the sink. "
                "Delete the checkpoint to resume from the table.")
        unknown = [tp for tp in end if tp not in begin]
        if unknown:
            with Cluster(self.source.kafka) as cluster:
                begin.update(earliest_offsets(cluster, unknown))
        # A partition's earliest offset past the end (retention) reads nothing; the position stays the end.
        return BatchPlan(batch, start={tp: min(begin[tp], off) for tp, off in end.items()}, end=dict(end))

    def _check_continuity(self, previous: SinkCommit, start: Offsets | None, end: Offsets, batch_id: int) -> None:
        # A batch must begin where the table's position ends, or rows would be lost or written twice.
        if start is None:
            return  # batch 0 of this checkpoint began at the table's offsets (start_stream passed them)
        moved = {tp: (previous.offsets[tp], off) for tp, off in start.items()
                 if tp in previous.offsets and previous.offsets[tp] != off}
        if moved:
            detail = ", ".join(f"{tp}: table {a}, checkpoint {b}" for tp, (a, b) in sorted(moved.items())[:5])
            raise CheckpointMismatchError(
                f"micro-batch {batch_id} of {self.options.checkpoint_location} starts elsewhere than the table "
                f"{self.target.table} for sink {self.target.sink_id!r} ({detail}); the checkpoint belongs to "
                "another table or sink, or another writer moved the sink. Delete the checkpoint to resume from "
                "the table.")

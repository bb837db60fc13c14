"""Kafka -> table streams: one query over the selected topics, each micro-batch committed table by table.

A Structured Streaming query reads `readStream.format("pykafka")` and writes every micro-batch with
`foreachBatch` through the same commit protocol as a batch load: each table's rows and end offsets in
one commit of its table format, under the table's own sink batch number, never Spark's batchId (a lost
checkpoint restarts batchId at 0, and the table would skip every write as "already committed"). Options
without a routing stream into one table (a routing of one); a routing sends every topic to its table.

The query subscribes to the topic list, or to the pattern so that topics created later are read without a restart: a
topic new to the query is read from its earliest offset (Spark's rule for new partitions). A query whose checkpoint is
new is placed where the tables are (their committed offsets, or `starting` for a table that has none), so nothing is
lost or read twice; batch loads and streams of the same sink continue each other.

Each table's position is the truth about what it holds:
- a micro-batch that ends at or before the table's position (a replay after a crash between the commit
  and Spark's commit log) is recognised and not written again;
- a routed table ahead of the micro-batch's start gets only the offsets past its position; one behind it
  (its last commit failed under `continue`, or the checkpoint moved on without it) gets its gap read from
  Kafka with a batch read, committed with the micro-batch's rows, so a failing table is retried at every
  micro-batch until it succeeds, and never loses records;
- a stream of one table is strict instead: a micro-batch that does not begin where the table is fails
  with CheckpointMismatchError (the checkpoint belongs to another table or sink, or another writer moved
  the sink), and a failing commit fails the query with its own error.
A table that has never committed starts where the query placed its topic (the checkpoint's first
micro-batch, or the earliest offset of a topic new to the query); once the query has moved past that
and the process restarted, such a table reads its topic from the earliest offset.

With the direct writer a micro-batch leaves `foreachBatch`'s rows unread for that table and its writer reads exactly
the table's offsets [begin, end) itself. Values a registry format decodes are decoded in the query of one table; a
routed query keeps them bytes and each decoding table reads its own ranges (one schema per read). Positions are kept
between micro-batches: a table's log is read when the table is first seen and after its commit failed, never on every
trigger; the positions mirrored to consumer groups go in one request per group.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import EARLIEST
from kafka_spark.offsets.resolve import resolve_partitions
from kafka_spark.sink.checked_values import table_rows
from kafka_spark.sink.commits import Mirrors, check_table, failed_result, following_schema, run_commits
from kafka_spark.sink.errors import CheckpointMismatchError, SinkError
from kafka_spark.sink.offset_log import batch_end_offsets, fresh_checkpoint
from kafka_spark.sink.options import StreamOptions, default_checkpoint, trigger_kwargs
from kafka_spark.sink.plan import BatchPlan, first_starts, placed_offsets
from kafka_spark.sink.position import SinkCommit, now_ms
from kafka_spark.sink.read_plan import apply_transform, read_plan
from kafka_spark.sink.results import Compaction, LoadResult
from kafka_spark.sink.routed import RoutedTable, carries_on, routed_tables, selected_rows, selection
from kafka_spark.sink.run_result import MultiLoadResult, TableCommitError
from kafka_spark.sink.table_format import TableFormat, TableWrites
from kafka_spark.sink.table_names import is_table_name
from kafka_spark.spark.redaction import redact_secret_options

log = logging.getLogger(__name__)

Offsets = Mapping[TopicPartition, int]


def start_stream(spark, options: StreamOptions, table_format: TableFormat):
    """Start the query (a `StreamingQuery`); see the module docstring."""
    redact_secret_options(spark)  # before the query clones the session's settings
    writer = StreamWriter(spark, options, table_format)
    if options.routing is None:
        _place_table(spark, options, table_format, writer)
    checkpoint = options.checkpoint_location
    with Cluster(options.kafka) as cluster:
        topics, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics, pattern=pattern)
        writer.route({tp.topic for tp in tps})
        fresh = fresh_checkpoint(spark, checkpoint)
        starts = writer.starting_offsets(cluster, tps)
        beginnings = earliest_offsets(cluster, tps) if tps else {}
    writer.initial = starts if fresh else None
    subscription = ("subscribePattern", pattern) if pattern else ("subscribe", ",".join(topics))
    # Values stay bytes in a routed query: a table whose values a registry format decodes reads its own ranges.
    source = options.source if writer.query_decodes else dataclasses.replace(options.source, decoding={})
    # A checkpoint with a committed micro-batch does not use them.
    starting = placed_offsets(starts, beginnings) if fresh else "earliest"
    read = {**source.client_options(), "startingOffsets": starting, subscription[0]: subscription[1],
            **options.pacing.reader_options(), **source.read_flags()}
    df = spark.readStream.format("pykafka").options(**read).load()
    return (df.writeStream.foreachBatch(writer).option("checkpointLocation", checkpoint)
            .queryName(f"kafka-spark-{options.sink_id}").trigger(**trigger_kwargs(options.pacing.trigger)).start())


def _place_table(spark, options: StreamOptions, table_format: TableFormat, writer: StreamWriter) -> None:
    """A stream of one table: its options checked and its writer too (a writer that cannot serve the table fails
    now, not at the first micro-batch); a catalog table new to the catalog is created from the query's output
    schema, so that its checkpoint can go beside it."""
    table = options.target.table
    check_table(spark, RoutedTable(tuple(options.topics), table, options), table_format)
    location = table_format.locate(table, spark)
    # Chosen for the table as it is now: a table this creates has its first commit from Spark's writer.
    writer.choices[table] = table_format.choose_writer(spark, options, location)
    if location is None:
        topics = {"subscribePattern": options.pattern} if options.pattern else {"subscribe": ",".join(options.topics)}
        read = {**options.source.client_options(), **options.source.read_flags(), **topics}
        schema = apply_transform(table_rows(spark.readStream.format("pykafka").options(**read).load(),
                                            options.parsing), options.format.transform).schema
        location = table_format.create_table(spark, table, schema, options.format.partition_by,
                                             options.format.sort_by)
    writer.locations[table] = location
    if options.checkpoint is None and is_table_name(table):
        options.checkpoint = default_checkpoint(table_format.root(location), options.sink_id)


@dataclass
class TableWork:
    """One table's part of a micro-batch: where each partition's rows begin (`begin`; None: where the
    micro-batch begins, not known as a number) and end."""

    routed: RoutedTable
    previous: SinkCommit | None
    begin: dict[TopicPartition, int | None]
    end: dict[TopicPartition, int]

    def moving(self) -> list[TopicPartition]:
        return sorted(tp for tp, b in self.begin.items() if b is None or b < self.end[tp])


class StreamWriter:
    """The `foreachBatch` function of a stream: one commit per table that moved in the micro-batch.

    A stream of one table (options without a routing) is strict: a micro-batch that does not begin where the
    table's position ends (the checkpoint belongs to another table or sink, or another writer moved the sink)
    fails with CheckpointMismatchError, and a failing commit fails the query with its own error."""

    def __init__(self, spark, options: StreamOptions, table_format: TableFormat) -> None:
        self.spark, self.options, self.table_format = spark, options, table_format
        self.continues = carries_on(options)
        self.strict = options.routing is None
        # A table that follows its subject's versions reads its own ranges: the query's schema is fixed.
        self.query_decodes = self.strict and not options.evolving
        self.routed: dict[str, list[RoutedTable]] = {}  # by topic: its table, or a split topic's tables
        self.positions: dict[str, SinkCommit | None] = {}  # by table; absent: read it from the table
        self.from_table: set[str] = set()  # tables whose kept position was read from them, not yet in a micro-batch
        self.locations: dict[str, Any] = {}  # the table format's locations, by table
        # The first offset of a partition whose table has not committed it yet (EARLIEST: its beginning).
        self.origins: dict[TopicPartition, int | None] = {}
        self.initial: dict[TopicPartition, int] | None = None  # where a fresh checkpoint's batch 0 begins
        self.results: list[MultiLoadResult] = []
        self.choices: dict[str, Any] = {}  # each table's writer, chosen once while it serves
        if options.compact_every is not None and not table_format.compacts:
            raise ConfigError(f"compact_every: {table_format.name} tables are not compacted by the stream")
        self.uncompacted: dict[str, int] = {}  # by table: its commits since this process last compacted it
        # The last micro-batch's end offsets (batch id, offsets): the next one's start, without reading the log.
        self.last_end: tuple[int, Offsets] | None = None

    # ---- routing and positions --------------------------------------------------------------------------

    def route(self, topics: set[str]) -> None:
        """Route topics new to the writer (checking the new tables' options); a shared table is refused."""
        if topics <= set(self.routed):
            return
        if self.options.routing is None:
            known = set(self.routed) | topics
            (table,) = routed_tables(self.options, known)  # one table of every topic seen
            self.routed = {topic: [table] for topic in known}
            return
        new: dict[str, list[RoutedTable]] = {}
        for routed in routed_tables(self.options, set(self.routed) | topics):
            if routed.topic not in self.routed:
                check_table(self.spark, routed, self.table_format)
                new.setdefault(routed.topic, []).append(routed)
        self.routed.update(new)

    def starting_offsets(self, cluster: Cluster, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where the query places every selected partition when its checkpoint is new: the tables' positions
        (a partition new to its table at its beginning), `starting` for tables that have not committed."""
        starts: dict[TopicPartition, int] = {}
        fresh: list[TopicPartition] = []
        for tp in tps:
            # A split topic starts where its furthest-behind table is; the others skip what they hold.
            previous = [self._position(routed) for routed in self.routed[tp.topic]]
            if any(p is None for p in previous):
                fresh.append(tp)
            else:
                starts[tp] = min(p.offsets.get(tp, EARLIEST) for p in previous if p is not None)
        opts = self.options
        if fresh:
            starts.update(first_starts(cluster, opts.starting, fresh, opts.start_zookeeper_group,
                                       opts.fail_on_data_loss))
        return starts

    def _position(self, routed: RoutedTable) -> SinkCommit | None:
        """The table's last commit: kept from this process's commits, else read from the table (and its
        dead letters repaired, as a single-table stream does when it starts)."""
        table = routed.table
        if table in self.positions:
            return self.positions[table]
        opts = routed.options
        location = self.locations.get(table) or self.table_format.locate(table, self.spark)
        previous = self.table_format.position(location, opts.sink_id)
        self.table_format.repair(self.spark, opts, previous)
        self.locations[table], self.positions[table] = location, previous
        self.from_table.add(table)
        return previous

    def _check_continuity(self, routed: RoutedTable, previous: SinkCommit | None, start: Offsets | None,
                          end: Offsets) -> None:
        """A strict stream's micro-batch must begin where the table's position ends (a replay, which ends where
        the table is, aside), or rows would be lost or written twice."""
        if previous is None or all(previous.offsets.get(tp) == off for tp, off in end.items()):
            return
        checkpoint, table, sink = self.options.checkpoint_location, routed.table, routed.options.sink_id
        ahead = sorted(tp for tp, off in end.items() if tp in previous.offsets and previous.offsets[tp] > off)
        if ahead:
            detail = ", ".join(f"{tp}: table {previous.offsets[tp]}, micro-batch end {end[tp]}" for tp in ahead[:5])
            raise CheckpointMismatchError(
                f"a micro-batch of {checkpoint} ends before the table {table} for sink {sink!r} ({detail}); "
                "another writer moved the sink. Delete the checkpoint to resume from the table.")
        if start is None:
            return  # batch 0 of this checkpoint began at the table's offsets (the query was placed there)
        moved = {tp: (previous.offsets[tp], off) for tp, off in start.items()
                 if tp in previous.offsets and previous.offsets[tp] != off}
        if moved:
            detail = ", ".join(f"{tp}: table {a}, checkpoint {b}" for tp, (a, b) in sorted(moved.items())[:5])
            raise CheckpointMismatchError(
                f"a micro-batch of {checkpoint} starts elsewhere than the table {table} for sink {sink!r} "
                f"({detail}); the checkpoint belongs to another table or sink, or another writer moved the sink. "
                "Delete the checkpoint to resume from the table.")

    def _begin(self, tp: TopicPartition, previous: SinkCommit | None, start: Offsets | None) -> int | None:
        if previous is not None and tp in previous.offsets:
            return previous.offsets[tp]
        if tp not in self.origins:
            # A partition its table has not committed: it begins where the query placed it, if that is
            # known to be the table's beginning; else (the query moved on before this process) at the start.
            placed = start is not None and start is self.initial
            if start is None or tp not in start:
                self.origins[tp] = None
            else:
                self.origins[tp] = start[tp] if placed else EARLIEST
        return self.origins[tp]

    # ---- one micro-batch --------------------------------------------------------------------------------

    def __call__(self, df, batch_id: int) -> None:
        started, cpu = time.monotonic(), time.process_time()
        checkpoint = self.options.checkpoint_location
        end = batch_end_offsets(self.spark, checkpoint, batch_id)
        if end is None:
            raise SinkError(f"{checkpoint}: micro-batch {batch_id} has no offset log entry")
        start: Offsets | None
        if batch_id == 0:
            start = self.initial
        elif self.last_end is not None and self.last_end[0] == batch_id - 1:
            start = self.last_end[1]  # an offset log entry never changes once written
        else:
            start = batch_end_offsets(self.spark, checkpoint, batch_id - 1)
        self.last_end = (batch_id, end)
        self.route({tp.topic for tp in end})
        result = MultiLoadResult(batch_id=batch_id)
        mirrors = Mirrors()
        work = self._work(end, start, result, mirrors)
        # One connection to the cluster for the micro-batch: earliest offsets, mirrors, latest offsets.
        with Cluster(self.options.kafka) as cluster:
            try:
                self._commit(df, batch_id, work, start, result, mirrors, cluster)
            finally:
                result.tables.sort(key=lambda r: r.table)
                result.seconds, result.driver_seconds = time.monotonic() - started, time.process_time() - cpu
                if self.strict:  # one table: its micro-batch's time is the table's
                    for table in result.tables:
                        table.seconds = result.seconds
                self.results.append(result)
            mirrors.publish(cluster)
            result.latest = self._latest(cluster, list(end), batch_id)
        self._compact(result)
        if self.options.on_trigger is not None:
            self.options.on_trigger(batch_id, result)
        if self.options.on_commit is not None:
            for done in result.committed:
                self.options.on_commit(batch_id, done)
        log.info("micro-batch %d: %d table(s) committed, %d failed, %d rows, %.2fs (driver %.2fs)", batch_id,
                 len(result.committed), len(result.failed), result.rows, result.seconds, result.driver_seconds)

    def _compact(self, result: MultiLoadResult) -> None:
        """Compact each table whose commits since its last compaction reach `compact_every`: here, between two
        micro-batches in the query's thread, so that none of the stream's commits runs beside it. The micro-batch
        has committed, so a compaction that fails is reported and tried again `compact_every` commits later."""
        settings = self.options.compacting
        if settings.every is None:
            return
        due = []
        for done in result.committed:
            count = self.uncompacted.get(done.table, 0) + 1
            self.uncompacted[done.table] = count % settings.every
            if count >= settings.every and self.locations.get(done.table) is not None:
                due.append(done)

        def compact(done: LoadResult) -> Compaction:
            return self.table_format.compact(self.locations[done.table], settings, self.choices.get(done.table))

        # Tables are compacted side by side, as they commit: each is its own.
        for done, outcome in zip(due, run_commits(self.spark, [partial(compact, d) for d in due]), strict=True):
            if isinstance(outcome, ConfigError):
                raise outcome  # settings the table refuses (a vacuum retention below its own) stop the stream
            if isinstance(outcome, Exception):
                log.warning("table %s: compaction failed, tried again later: %s", done.table, outcome)
                outcome = Compaction(done.table, error=f"{type(outcome).__name__}: {outcome}")
            done.compaction = outcome

    @staticmethod
    def _latest(cluster: Cluster, tps: list[TopicPartition], batch_id: int) -> dict[TopicPartition, int]:
        """The brokers' latest offsets of the micro-batch's partitions, for each table's lag (one request per
        broker); none when they cannot be read, which costs the progress its lag and nothing else."""
        try:
            return latest_offsets(cluster, tps, cluster.config.isolation_level)
        except Exception as exc:  # progress only: the micro-batch has committed
            log.warning("micro-batch %d: the latest offsets for its lag could not be read: %s", batch_id, exc)
            return {}

    def _work(self, end: Offsets, start: Offsets | None, result: MultiLoadResult, mirrors: Mirrors
              ) -> list[TableWork]:
        """The tables that move in this micro-batch, with where each of their partitions begins."""
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in end:
            by_topic.setdefault(tp.topic, []).append(tp)
        work = []
        tables = {r.table: r for topic in by_topic for r in self.routed[topic]}
        for routed in sorted(tables.values(), key=lambda r: r.table):
            tps = [tp for topic in routed.topics for tp in by_topic.get(topic, [])]
            try:
                previous = self._position(routed)
                known = routed.table not in self.from_table
                self.from_table.discard(routed.table)
                if self.strict:
                    self._check_continuity(routed, previous, start, {tp: end[tp] for tp in tps})
                item = TableWork(routed, previous, {tp: self._begin(tp, previous, start) for tp in tps},
                                 {tp: end[tp] for tp in tps})
            except Exception as exc:
                self._failed(routed, exc, result)
                continue
            if item.moving():
                work.append(item)
            elif not known and previous is not None:
                # Read from the table just now and already at the end: a replay after a crash, which may
                # have come between the commit and its mirrors.
                log.warning("micro-batch ends where table %s already is: a replay; not written again",
                            routed.table)
                mirrors.add(routed.options.publishing, previous.offsets)
        return work

    def _commit(self, df, batch_id: int, work: list[TableWork], start: Offsets | None, result: MultiLoadResult,
                mirrors: Mirrors, cluster: Cluster) -> None:
        writes = self.table_format.writes(self.spark, dataclasses.replace(self.options.source, decoding={}),
                                          self.choices)
        for item in work:
            if item.routed.options.evolving:
                # chosen for the subject's version of this micro-batch, which may add columns to the table
                self.choices.pop(item.routed.table, None)
            writes.writer(item.routed, self.locations.get(item.routed.table))
        self._resolve_earliest(work, writes, cluster)
        commits = {item.routed.table: self._sink_commit(item, batch_id) for item in work}
        for item in work:
            writes.add(item.routed, self._own_plan(item), commits[item.routed.table])
        writes.write_files()
        from_batch = [w for w in work if not writes.reads_own(w.routed)]
        frame = df
        if len(from_batch) > 1:
            slots = max(self.spark.sparkContext.defaultParallelism, 1)
            frame = df.coalesce(slots).persist()

        def write(item: TableWork) -> LoadResult:
            location, began = self.locations.get(item.routed.table), time.monotonic()
            done = following_schema(writes, item.routed, location, partial(
                writes.commit, item.routed, partial(self._rows, frame, item, start), f"micro-batch {batch_id}",
                location))
            # each table's own commit time (its metrics' commit seconds); a stream of one table takes the whole
            # micro-batch's below
            done.seconds = done.seconds or time.monotonic() - began
            return done

        try:
            # Every commit has finished here, those after a failing one included (fail-fast reports them too).
            outcomes = run_commits(self.spark, [partial(write, item) for item in work])
        finally:
            if frame is not df:
                frame.unpersist()
        first: tuple[TableWork, Exception] | None = None
        for item, outcome in zip(work, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self._failed_commit(item, outcome, result)
                first = first or (item, outcome)
            else:
                self._committed(item, commits[item.routed.table], outcome, result, mirrors)
        if first is not None and not self.continues:
            item, exc = first
            if self.strict:
                raise exc
            raise TableCommitError(f"table {item.routed.table} (topic {item.routed.topic!r}) failed: {exc}",
                                   item.routed.table, item.routed.topic, result) from exc

    @staticmethod
    def _resolve_earliest(work: list[TableWork], writes: TableWrites, cluster: Cluster) -> None:
        """The earliest offsets of the partitions that begin there, in one request for the micro-batch."""
        wanted = [tp for w in work for tp, b in w.begin.items()
                  if b == EARLIEST or (b is None and writes.reads_own(w.routed))]
        if not wanted:
            return
        earliest = earliest_offsets(cluster, wanted)
        for w in work:
            for tp in w.begin:
                if tp in earliest:
                    w.begin[tp] = earliest[tp]

    def _sink_commit(self, item: TableWork, batch_id: int) -> SinkCommit:
        """What the table's commit records: its next sink batch and its offsets after this micro-batch."""
        previous = item.previous
        batch = previous.batch + 1 if previous else 0
        carried = {tp: off for tp, off in (previous.offsets if previous else {}).items() if tp not in item.end}
        offsets = {**carried, **{tp: max(b or 0, e) for tp, e in item.end.items() for b in (item.begin[tp],)}}
        return SinkCommit(sink_id=item.routed.options.sink_id, batch=batch, offsets=offsets,
                          start_offsets={tp: b for tp, b in item.begin.items() if b is not None},
                          run_id=f"{uuid.uuid4().hex[:8]}-q{batch_id}", committed_at_ms=now_ms())

    @staticmethod
    def _own_plan(item: TableWork) -> BatchPlan:
        """The table's ranges in this micro-batch, for a writer that reads them from Kafka itself."""
        moving = item.moving()
        return BatchPlan(0, start={tp: b for tp in moving for b in (item.begin[tp],) if b is not None},
                         end={tp: item.end[tp] for tp in moving})

    def _committed(self, item: TableWork, commit: SinkCommit, done: LoadResult, result: MultiLoadResult,
                   mirrors: Mirrors) -> None:
        routed = item.routed
        self.positions[routed.table] = dataclasses.replace(commit, offsets=done.offsets,
                                                           dead_letters=done.dead_letters)
        if self.locations.get(routed.table) is None:
            # a catalog table made by the write
            self.locations[routed.table] = self.table_format.locate(routed.table, self.spark)
        for tp in item.begin:
            self.origins.pop(tp, None)
        result.tables.append(done)
        mirrors.add(routed.options.publishing, done.offsets)

    def _failed_commit(self, item: TableWork, exc: Exception, result: MultiLoadResult) -> None:
        # Where the failed attempt began is where the next one begins, whatever the table's log says.
        previous = item.previous
        for tp, b in item.begin.items():
            if not (previous and tp in previous.offsets):
                self.origins[tp] = EARLIEST if b is None else b
        self._failed(item.routed, exc, result, stops=False)

    def _rows(self, frame, item: TableWork, start: Offsets | None):
        """The table's rows: its topic's rows of the micro-batch past its position, and its gap before the
        micro-batch read from Kafka; a decoding table reads all of its ranges (one schema per read)."""
        from pyspark.sql import functions as F

        routed = item.routed
        source = routed.options.source
        moving = item.moving()
        if routed.decoded and not self.query_decodes:
            return selected_rows(read_plan(self.spark, source, self._own_plan(item)), routed)
        starts = {tp: start[tp] for tp in moving if start is not None and tp in start}
        begins = {tp: b for tp in moving for b in (item.begin[tp],) if b is not None}
        gap = {tp: b for tp, b in begins.items() if tp in starts and b < starts[tp]}
        # Rows of the micro-batch the table already holds (it is ahead of the micro-batch's start) stay out.
        ahead = {tp: b for tp, b in begins.items() if tp not in starts or b > starts[tp]}
        condition = F.col("topic").isin(*routed.topics)
        if ahead:
            clauses = [(F.col("partition") == tp.partition) & (F.col("offset") >= ahead[tp]) if tp in ahead
                       else F.col("partition") == tp.partition for tp in moving]
            keep = clauses[0]
            for clause in clauses[1:]:
                keep = keep | clause
            condition = condition & keep
        rows = frame.where(condition)
        if gap:
            log.warning("table %s is behind the micro-batch (%s): reading its gap from Kafka", routed.table,
                        ", ".join(f"{tp} {b}..{starts[tp]}" for tp, b in sorted(gap.items())[:5]))
            plan = BatchPlan(0, start=dict(gap), end={tp: min(starts[tp], item.end[tp]) for tp in gap})
            rows = rows.unionByName(read_plan(self.spark, dataclasses.replace(source, decoding={}), plan))
        return selected_rows(rows, routed)

    def _failed(self, routed: RoutedTable, exc: Exception, result: MultiLoadResult, stops: bool = True) -> None:
        """Report the table; its position is read again from the table next time; fail-fast stops the query
        (`stops=False`: the caller raises, once the micro-batch's other commits are reported)."""
        self.positions.pop(routed.table, None)
        failed: LoadResult = failed_result(routed, routed.options.sink_id, exc)
        result.tables.append(failed)
        if stops and self.strict:
            raise exc
        if stops and not self.continues:
            raise TableCommitError(f"table {routed.table} (topic {routed.topic!r}) failed: {exc}", routed.table,
                                   routed.topic, result) from exc

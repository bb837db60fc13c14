"""A batch load: every table of the options committing its rows and offsets, each in one transaction.

Options without a routing load one table (a routing of one: the table holds all the selected topics);
with a routing, every selected topic goes to its own table. One plan over all topics (one metadata and
two offset requests), one `format("pykafka")` read of all the ranges whose values stay bytes, persisted
once, then one commit per table with its topics' rows, the tables committing side by side
(`run_commits`), each through its table format's writers. A table whose values a registry format decodes
reads its own ranges (one schema per read).
Each table is its own sink: it resumes from its own commits, so a table that failed is behind by
exactly what it lacks, and the next load reads that again.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.admission import rate_limit
from kafka_spark.offsets.resolve import leader_hints, resolve_partitions
from kafka_spark.sink.commits import Mirrors, check_table, failed_result, following_schema, run_commits
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.plan import BatchPlan, checked_start, first_starts, merged_plan, refuse_shared
from kafka_spark.sink.position import SinkCommit, now_ms
from kafka_spark.sink.progress import Progress
from kafka_spark.sink.read_plan import read_plan
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.routed import RoutedTable, carries_on, routed_tables, selected_rows, selection
from kafka_spark.sink.run_result import MultiLoadResult, TableCommitError
from kafka_spark.sink.table_format import TableFormat

log = logging.getLogger(__name__)


@dataclass
class TableRun:
    """One table in a routed load: where it is, what it has committed, and its plan."""

    routed: RoutedTable
    location: Any = None  # the table format's
    previous: SinkCommit | None = None
    plan: BatchPlan | None = None


def load_tables(spark, options: LoadOptions, table_format: TableFormat) -> MultiLoadResult:
    """Load everything new of every topic `options.routing` selects into the topic's table, one commit
    per table; see the module docstring. Fail-fast raises TableCommitError naming the first failing table."""
    started, cpu = time.monotonic(), time.process_time()
    carry_on = carries_on(options)
    run_id = uuid.uuid4().hex[:12]
    result = MultiLoadResult()
    mirrors = Mirrors()
    if options.routing is None:  # a routing of one: its options are checked before the brokers are asked
        check_table(spark, RoutedTable(tuple(options.topics), options.target.table, options), table_format)
    with Cluster(options.kafka) as cluster:
        topics_given, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics_given, pattern=pattern)
        if not tps:
            raise ConfigError(f"no topic matches {pattern!r}" if pattern else "no topics to load")
        topics = sorted({tp.topic for tp in tps})
        runs = [TableRun(r) for r in routed_tables(options, topics)]
        for run in runs if options.routing is not None else []:
            check_table(spark, run.routed, table_format)
        ready = _prepare(spark, table_format, runs, tps, result, carry_on)
        latest = latest_offsets(cluster, tps, cluster.config.isolation_level)
        earliest = earliest_offsets(cluster, tps)
        result.latest = dict(latest)
        ready = _plan(cluster, options, ready, tps, latest, earliest, result, carry_on)
        try:
            _commit_all(spark, table_format, options, ready, run_id, result, mirrors, carry_on)
        finally:
            result.seconds, result.driver_seconds = time.monotonic() - started, time.process_time() - cpu
            mirrors.publish(cluster)
    result.tables.sort(key=lambda r: r.table)
    return result


def load_table(spark, options: LoadOptions, table_format: TableFormat) -> LoadResult:
    """Load everything new since the table's committed offsets (up to `max_records`) in one commit: the
    options' table as a routing of one. A failure raises the table's own error."""
    if options.routing is not None:
        raise ConfigError("options with a routing load many tables: call load_tables, which reports each table")
    try:
        result = load_tables(spark, options, table_format)
    except TableCommitError as exc:
        cause = exc.__cause__
        if cause is None:
            raise
        raise cause.with_traceback(cause.__traceback__) from None
    (table,) = result.tables
    table.seconds = result.seconds
    return table


def _fail(run: TableRun, exc: Exception, result: MultiLoadResult, continues: bool, what: str) -> None:
    result.tables.append(failed_result(run.routed, run.routed.options.sink_id, exc))
    if not continues:
        result.tables.sort(key=lambda r: r.table)
        raise TableCommitError(f"table {run.routed.table} (topic {run.routed.topic!r}) failed while {what}: {exc}",
                               run.routed.table, run.routed.topic, result) from exc


def _prepare(spark, table_format: TableFormat, runs: list[TableRun], tps: Sequence[TopicPartition],
             result: MultiLoadResult, continues: bool) -> list[TableRun]:
    """Each table's location and committed position, its dead letters repaired; failing tables left out."""
    ready = []
    for run in runs:
        opts = run.routed.options
        try:
            run.location = table_format.locate(run.routed.table, spark)
            run.previous, others = table_format.positions(run.location, opts.sink_id)
            refuse_shared(others, [tp for tp in tps if tp.topic in run.routed.topics])
            table_format.repair(spark, opts, run.previous)
        except Exception as exc:  # one table's trouble (a permission error, a broken log) is reported by name
            _fail(run, exc, result, continues, "reading its position")
            continue
        ready.append(run)
    return ready


def _plan(cluster: Cluster, options: LoadOptions, runs: list[TableRun], tps: Sequence[TopicPartition],
          latest: dict[TopicPartition, int], earliest: dict[TopicPartition, int], result: MultiLoadResult,
          continues: bool) -> list[TableRun]:
    """Every table's batch: from its committed offsets (or `starting` for a new table) to the latest; with
    `max_records`, the whole load is capped, shared out as a single table's plan is."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp)
    fresh = [tp for run in runs if run.previous is None for tp in _partitions(run, by_topic)]
    firsts = first_starts(cluster, options.starting, fresh, options.start_zookeeper_group,
                          options.fail_on_data_loss) if fresh else {}
    planned: list[TableRun] = []
    starts: dict[TopicPartition, int] = {}
    for run in runs:
        committed = run.previous.offsets if run.previous else {}
        try:
            # Partitions a topic gains after its table's first load start at their beginning, as in one table.
            start = {tp: firsts[tp] if tp in firsts else
                     checked_start(tp, committed[tp], latest[tp], earliest[tp], options.fail_on_data_loss)
                     if tp in committed else earliest[tp] for tp in _partitions(run, by_topic)}
        except Exception as exc:  # offsets moved backwards, or deleted before they were loaded
            _fail(run, exc, result, continues, "planning")
            continue
        lost = {tp: start[tp] - committed[tp] for tp in start if tp in committed and start[tp] > committed[tp]}
        carried = {tp: off for tp, off in committed.items() if tp not in start}
        run.plan = BatchPlan(batch=run.previous.batch + 1 if run.previous else 0, start=start, end={},
                             carried=carried, lost=lost)
        starts.update(start)
        planned.append(run)
    reachable = {tp: max(latest[tp], off) for tp, off in starts.items()}
    end = rate_limit(options.max_records, starts, reachable, exact=True) if options.max_records else reachable
    for run in planned:
        assert run.plan is not None
        run.plan.end = {tp: end[tp] for tp in run.plan.start}
    hints = leader_hints(cluster, [tp for run in planned if run.plan for tp in run.plan.reading])
    for run in planned:
        assert run.plan is not None
        run.plan.leaders = {tp: hints[tp] for tp in run.plan.reading if tp in hints}
    return planned


def _commit_all(spark, table_format: TableFormat, options: LoadOptions, runs: list[TableRun], run_id: str,
                result: MultiLoadResult, mirrors: Mirrors, continues: bool) -> None:
    """One commit per table with something to commit: the direct-written tables' files from one read, the
    other raw tables' rows from one persisted read."""
    moving = [run for run in runs if _moves(run)]
    for run in runs:
        if not _moves(run):
            assert run.previous is not None
            result.tables.append(LoadResult("up-to-date", run.routed.options.sink_id, run.previous.batch,
                                            offsets=run.previous.offsets, run_id=run_id, table=run.routed.table,
                                            topic=run.routed.topic))
            # in case the last run died before it published
            mirrors.add(run.routed.options.publishing, run.previous.offsets)
    positions = {run.routed.table: _position(run, run_id) for run in moving}
    writes = table_format.writes(spark, options.source)
    for run in moving:
        assert run.plan is not None
        writes.writer(run.routed, run.location)
        writes.add(run.routed, run.plan, positions[run.routed.table])
    writes.write_files()
    shared = [run for run in moving if writes.spark_rows(run.routed) and not run.routed.decoded and run.plan
              and run.plan.size]
    frame = _shared_read(spark, options, shared) if len(shared) > 1 else None
    progress = options.format.progress and len(moving) > 1  # one line for the batch, not one per table

    def commit(run: TableRun) -> LoadResult:
        assert run.plan is not None
        label = f"batch {run.plan.batch}"
        return following_schema(writes, run.routed, run.location, lambda: writes.commit(
            run.routed, lambda: _rows(spark, run, frame if run in shared else None), label, run.location,
            progress=not progress))

    try:
        with Progress(spark, f"{len(moving)} tables") if progress else nullcontext():
            # Every commit has finished here, those after a failing one included (fail-fast reports them too).
            outcomes = run_commits(spark, [partial(commit, run) for run in moving])
    finally:
        if frame is not None:
            frame.unpersist()
    first: tuple[TableRun, Exception] | None = None
    for run, done in zip(moving, outcomes, strict=True):
        assert run.plan is not None
        if isinstance(done, Exception):
            result.tables.append(failed_result(run.routed, run.routed.options.sink_id, done))
            first = first or (run, done)
            continue
        done.lost = dict(run.plan.lost)
        result.tables.append(done)
        mirrors.add(run.routed.options.publishing, done.offsets)
    if first is not None and not continues:
        run, exc = first
        assert run.plan is not None
        result.tables.sort(key=lambda r: r.table)
        raise TableCommitError(f"table {run.routed.table} (topic {run.routed.topic!r}) failed while committing "
                               f"batch {run.plan.batch}: {exc}", run.routed.table, run.routed.topic, result) from exc


def _position(run: TableRun, run_id: str) -> SinkCommit:
    assert run.plan is not None
    return SinkCommit(sink_id=run.routed.options.sink_id, batch=run.plan.batch,
                      offsets=run.plan.committed_offsets(), start_offsets=dict(run.plan.start),
                      run_id=run_id, committed_at_ms=now_ms())


def _partitions(run: TableRun, by_topic: dict[str, list[TopicPartition]]) -> list[TopicPartition]:
    return [tp for topic in run.routed.topics for tp in by_topic.get(topic, [])]


def _moves(run: TableRun) -> bool:
    """Whether the table's position moves: records to read, records lost, or its first commit."""
    plan = run.plan
    assert plan is not None
    return run.previous is None or plan.size > 0 or bool(plan.lost)


def _shared_read(spark, options: LoadOptions, runs: list[TableRun]):
    """One read of the raw tables' ranges, in at most as many tasks as Spark runs at once, persisted: each
    table's commit scans it for its topic, so fewer partitions means fewer tasks per table."""
    plan = merged_plan([run.plan for run in runs if run.plan is not None])
    source = dataclasses.replace(options.source, topics=sorted({t for r in runs for t in r.routed.topics}),
                                 decoding={})
    df = read_plan(spark, source, plan)
    slots = max(spark.sparkContext.defaultParallelism, 1)
    if len(plan.reading) > slots:
        df = df.coalesce(slots)
    return df.persist()


def _rows(spark, run: TableRun, frame):
    """The table's rows: its topic's part of the shared read, or a read of its own ranges (a split table's
    share of them)."""
    assert run.plan is not None
    if frame is not None:
        from pyspark.sql import functions as F

        return selected_rows(frame.where(F.col("topic").isin(*run.routed.topics)), run.routed)
    return selected_rows(read_plan(spark, run.routed.options.source, run.plan), run.routed)

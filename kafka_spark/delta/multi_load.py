"""A routed batch load: every selected topic into its own table, each table committing its rows and offsets.

One plan over all topics (one metadata and two offset requests), one `format("pykafka")` read of all
the ranges whose values stay bytes, persisted once, then one Delta commit per table with its topic's
rows, the tables committing side by side (`run_commits`). A table whose values a registry format decodes
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

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.dead_letter import reconcile
from kafka_spark.delta.errors import ConcurrentWriterError
from kafka_spark.delta.location import TableLocation, locate
from kafka_spark.delta.multi_result import MultiLoadResult, TableCommitError
from kafka_spark.delta.options import LoadOptions
from kafka_spark.delta.plan import BatchPlan, checked_start, first_starts, merged_plan
from kafka_spark.delta.position import SinkCommit, now_ms, sink_positions
from kafka_spark.delta.progress import Progress
from kafka_spark.delta.read_plan import read_plan
from kafka_spark.delta.results import LoadResult
from kafka_spark.delta.routed import RoutedTable, routed_tables, routing_of, selected_rows, selection
from kafka_spark.delta.routed_writes import RoutedWrites
from kafka_spark.delta.table_commit import Mirrors, check_table, failed_result, run_commits
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.admission import rate_limit
from kafka_spark.offsets.resolve import leader_hints, resolve_partitions

log = logging.getLogger(__name__)


@dataclass
class TableRun:
    """One table in a routed load: where it is, what it has committed, and its plan."""

    routed: RoutedTable
    location: TableLocation | None = None
    previous: SinkCommit | None = None
    plan: BatchPlan | None = None


def load_tables(spark, options: LoadOptions) -> MultiLoadResult:
    """Load everything new of every topic `options.routing` selects into the topic's table, one Delta commit
    per table; see the module docstring. Fail-fast raises TableCommitError naming the first failing table."""
    started, cpu = time.monotonic(), time.process_time()
    routing = routing_of(options)
    run_id = uuid.uuid4().hex[:12]
    result = MultiLoadResult()
    mirrors = Mirrors()
    with Cluster(options.kafka) as cluster:
        topics_given, pattern = selection(options)
        tps = resolve_partitions(cluster, subscribe=topics_given, pattern=pattern)
        if not tps:
            raise ConfigError(f"no topic matches {pattern!r}" if pattern else "no topics to load")
        topics = sorted({tp.topic for tp in tps})
        runs = [TableRun(r) for r in routed_tables(options, topics)]
        for run in runs:
            check_table(spark, run.routed)
        ready = _prepare(spark, runs, result, routing.continues)
        latest = latest_offsets(cluster, tps, cluster.config.isolation_level)
        earliest = earliest_offsets(cluster, tps)
        result.latest = dict(latest)
        ready = _plan(cluster, options, ready, tps, latest, earliest, result, routing.continues)
        try:
            _commit_all(spark, options, ready, run_id, result, mirrors, routing.continues)
        finally:
            result.seconds, result.driver_seconds = time.monotonic() - started, time.process_time() - cpu
            mirrors.publish(cluster)
    result.tables.sort(key=lambda r: r.table)
    return result


def _fail(run: TableRun, exc: Exception, result: MultiLoadResult, continues: bool, what: str) -> None:
    result.tables.append(failed_result(run.routed, run.routed.options.sink_id, exc))
    if not continues:
        result.tables.sort(key=lambda r: r.table)
        raise TableCommitError(f"table {run.routed.table} (topic {run.routed.topic!r}) failed while {what}: {exc}",
                               run.routed.table, run.routed.topic, result) from exc


def _prepare(spark, runs: list[TableRun], result: MultiLoadResult, continues: bool) -> list[TableRun]:
    """Each table's location and committed position, its dead letters repaired; failing tables left out."""
    ready = []
    for run in runs:
        opts = run.routed.options
        try:
            run.location = locate(run.routed.table, spark)
            run.previous, others = sink_positions(run.location, opts.sink_id)
            for other in others:
                if any(tp.topic == run.routed.topic for tp in other.offsets):
                    raise ConcurrentWriterError(
                        f"topic {run.routed.topic!r} is already loaded into {run.routed.table} by sink "
                        f"{other.sink_id!r}; one table holds each topic-partition from one sink only")
            reconcile(spark, opts.source, opts.target, opts.parsing, run.previous)
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
    fresh = [tp for run in runs if run.previous is None for tp in by_topic[run.routed.topic]]
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
                     if tp in committed else earliest[tp] for tp in by_topic[run.routed.topic]}
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


def _commit_all(spark, options: LoadOptions, runs: list[TableRun], run_id: str, result: MultiLoadResult,
                mirrors: Mirrors, continues: bool) -> None:
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
    writes = RoutedWrites(spark, options.source)
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
        return writes.commit(run.routed, lambda: _rows(spark, run, frame if run in shared else None),
                             f"batch {run.plan.batch}", run.location, progress=not progress)

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


def _moves(run: TableRun) -> bool:
    """Whether the table's position moves: records to read, records lost, or its first commit."""
    plan = run.plan
    assert plan is not None
    return run.previous is None or plan.size > 0 or bool(plan.lost)


def _shared_read(spark, options: LoadOptions, runs: list[TableRun]):
    """One read of the raw tables' ranges, in at most as many tasks as Spark runs at once, persisted: each
    table's commit scans it for its topic, so fewer partitions means fewer tasks per table."""
    plan = merged_plan([run.plan for run in runs if run.plan is not None])
    source = dataclasses.replace(options.source, topics=sorted({r.routed.topic for r in runs}), decoding={})
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

        return selected_rows(frame.where(F.col("topic") == run.routed.topic), run.routed)
    return selected_rows(read_plan(spark, run.routed.options.source, run.plan), run.routed)

"""A change stream's batch applied to a Delta table with its offsets in one commit: Delta's MERGE on Spark, or
delta-rs's (delta/direct_merge.py: the direct writer's, for path tables).

Per key, the batch's last change (delta/changes.py) updates, inserts or deletes the row; a truncate also
deletes every row the batch does not change (`WHEN NOT MATCHED BY SOURCE`); new columns are added (schema
evolution). The table's first commit, when the table is not there yet, is an append of the rows the batch
leaves (an empty table's MERGE would give the same rows).

Exactly once, as an append: the commit carries the sink's `txn` (`kafka-spark/<sink id>`, the batch number)
and the batch's JSON as `userMetadata`, so delta/position.py resumes from it and Delta skips a re-run of a
committed batch (detected afterwards, as for appends). A MERGE takes no writer options: Delta reads them
from the session's SQL confs (its idempotent DML). They are set on a clone of the session made for this
one MERGE, never on the caller's: a routed batch commits its tables in parallel threads, and any other
Delta write of the session would otherwise carry this table's `txn` and metadata.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.changes import DELETED, BatchChanges, batch_changes, merge_clauses
from kafka_spark.delta.direct_merge import append_changes, merge_changes
from kafka_spark.delta.direct_merge import table_schema as table_schema_of
from kafka_spark.delta.location import TableLocation, locate, path_location
from kafka_spark.delta.position import write_pending
from kafka_spark.delta.spark_commit import is_conflict, save_to, settled
from kafka_spark.delta.task_changes import task_changes
from kafka_spark.delta.txn_append import append_batch_rows
from kafka_spark.sink.change_capture import ChangeCapture
from kafka_spark.sink.checked_values import DECODE_ERRORS, RAW_COLUMNS
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import ConcurrentWriterError
from kafka_spark.sink.freshness import Freshness, ObservedFreshness
from kafka_spark.sink.options import SinkTarget, ValueParsing, WriteFormat
from kafka_spark.sink.position import SinkCommit, app_id
from kafka_spark.sink.progress import Progress
from kafka_spark.sink.results import LoadResult
from kafka_spark.spark.versions import require_delta_spark

if TYPE_CHECKING:
    from kafka_spark.sink.read_plan import PlanReader

log = logging.getLogger(__name__)

# Delta's idempotent DML and commit metadata, read from the session by MERGE (and every other Delta write).
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"
KAFKA_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def merge_commit(spark, target: SinkTarget, fmt: WriteFormat, parsing: ValueParsing, capture: ChangeCapture, df,
                 commit: SinkCommit, label: str, location: TableLocation | None = None,
                 direct: bool = False, read: PlanReader | None = None) -> LoadResult:
    """Apply the batch's changes (`df`: its records, Spark's Kafka columns) with `commit`, in one Delta commit:
    Spark's MERGE, or with `direct` delta-rs's (a path table; delta/direct_merge.py). With `read` (the batch
    plan's reader; `df` None reads it) the read tasks find the last change per key (delta/task_changes.py),
    unless the batch needs the SQL parse."""
    if not direct:
        require_delta_spark(f"{target.table} {label}: change data capture (Delta's MERGE on Spark)", spark)
    location = location or locate(target.table, spark)
    exists = location is not None and location.state().refresh() is not None
    table_schema = None
    if exists and location is not None:
        table_schema = table_schema_of(location) if direct else _delta_table(spark, location).toDF().schema
    value_schema = None
    if parsing.value_schema:
        from kafka_spark.sink.value_schema import value_struct

        value_schema = value_struct(spark, parsing.value_schema)
    reason = None  # why the read tasks did not find the changes (they were asked to)
    if read is not None and capture.history is None:
        found = task_changes(read, capture, table_schema, value_schema)
        if not isinstance(found, str):
            fresh = found.freshness
            if not direct:  # Spark's MERGE takes them as a DataFrame
                found.changes.rows = spark.createDataFrame(found.changes.to_arrow())
            return _commit(spark, target, fmt, parsing, capture, found.changes, lambda: fresh, commit, label,
                           location, direct, exists, table_schema)
        reason = f"its changes were parsed in Spark SQL: the read tasks met {found}"
        log.info("%s %s: %s", target.table, label, reason)
    if df is None:
        assert read is not None
        df = read(None)
    # Read from Kafka once: batch_changes caches the records' parse. Their timestamps are observed by the first
    # job over them (the batch's summary), not a job of their own.
    # a registry format's decode errors and bytes go along: a record that did not decode is the batch's error (or
    # dead letter), not a delete
    extra = (c for c in (*DECODE_ERRORS, *RAW_COLUMNS.values()) if c in df.columns)
    observed = ObservedFreshness(df.select(*KAFKA_COLUMNS, *extra))
    changes = batch_changes(observed.df, capture, table_schema, value_schema, keep_bad=bool(parsing.dead_letter))
    result = _commit(spark, target, fmt, parsing, capture, changes, observed.freshness, commit, label, location,
                     direct, exists, table_schema)
    if reason is not None:
        result.writer, result.writer_reason = "direct" if direct else "spark", reason
    return result


def _commit(spark, target: SinkTarget, fmt: WriteFormat, parsing: ValueParsing, capture: ChangeCapture,
            changes: BatchChanges, freshness: Callable[[], Freshness | None], commit: SinkCommit, label: str,
            location: TableLocation | None, direct: bool, exists: bool, table_schema: Any) -> LoadResult:
    history = capture.history  # rendered for this table by the caller
    try:
        if changes.dead_letters or history:
            commit = _repairable(changes, commit, history is not None)
        result = _apply(spark, target, fmt, changes, freshness, commit, label, location, direct, exists,
                        table_schema)
        if result.dead_letters:
            crash_point("before-dead-letters")
            assert parsing.dead_letter is not None
            append_batch_rows(changes.dead_letter_rows(), commit, parsing.dead_letter)
        if history is not None and changes.history is not None and result.status == "committed":
            crash_point("before-history")
            append_batch_rows(changes.history, commit, history)
        return result
    finally:
        changes.release()


def _repairable(changes: BatchChanges, commit: SinkCommit, history: bool) -> SinkCommit:
    """`commit` with its dead letters counted, whether its changes go to a history table, and the first offset
    read of each partition it has no start for (a stream's first batch), so that a repair can read the batch
    again (dead_letter.reconcile, change_history.reconcile_history)."""
    from pyspark.sql import functions as F

    assert changes.parsed is not None
    start = dict(commit.start_offsets)
    if any(tp not in start for tp in commit.offsets):  # a job only when a partition's start is not known
        for row in changes.parsed.groupBy("topic", "partition").agg(F.min("offset").alias("first")).collect():
            start.setdefault(TopicPartition(row["topic"], row["partition"]), row["first"])
    return dataclasses.replace(commit, start_offsets=start, dead_letters=changes.dead_letters, history=history)


def _apply(spark, target: SinkTarget, fmt: WriteFormat, changes: BatchChanges,
           freshness: Callable[[], Freshness | None],
           commit: SinkCommit, label: str, location: TableLocation | None, direct: bool, exists: bool,
           table_schema: Any) -> LoadResult:
    sink_id = target.sink_id
    if not exists and changes.records == 0:
        # Nothing to make the table's columns of: the table is created by the stream's first change.
        log.info("%s %s: no change yet; the table is created by the first one", target.table, label)
        return LoadResult("up-to-date", sink_id, None, offsets=dict(commit.start_offsets), run_id=commit.run_id)
    if location is None:  # a catalog table not created yet: created empty, then merged into
        assert changes.rows is not None  # a catalog table is written by Spark's MERGE
        schema = changes.rows.drop(DELETED).schema
        location = path_location(create_catalog_table(spark, target.table, schema, fmt.partition_by), spark,
                                 name=target.table)
        exists = True
    # As the direct writer's appends: how old the records are as the commit is made, in its metadata.
    fresh = freshness() if changes.records else None
    if fresh is not None:
        commit = dataclasses.replace(commit, freshness_ms=fresh.summary())
    write_pending(location, commit)
    state = location.state()
    before = state.refresh()
    before = -1 if before is None else before
    crash_point("before-write")
    try:
        with Progress(spark, f"{sink_id} {label}") if fmt.progress else nullcontext():
            if direct:
                if exists:
                    merge_changes(changes, location, commit)
                else:
                    append_changes(changes, location, tuple(fmt.partition_by), commit)
            elif exists:
                _merge(spark, changes, location, commit, table_schema)
            else:
                _append(changes, location, fmt, commit)
    except Exception as exc:  # Delta's conflict errors come through py4j as several types
        refused = changes.refused(exc)
        if refused is not None:
            raise refused from None
        if is_conflict(exc):
            raise ConcurrentWriterError(
                f"another writer committed to {location} for sink {sink_id!r} at the same time; this run's batch "
                f"{commit.batch} was not applied. Run one load per sink and table at a time.") from None
        raise
    winner, _ = settled(location, state, commit, before, "MERGE, so no change was applied twice")
    version = state.version_reaching(app_id(sink_id), commit.batch, before)
    return LoadResult("committed", sink_id, commit.batch, rows=changes.records - changes.dead_letters,
                      table_version=version, start=dict(commit.start_offsets), offsets=winner.offsets,
                      run_id=commit.run_id, dead_letters=winner.dead_letters, freshness=fresh)


def _delta_table(session, location: TableLocation):
    from delta.tables import DeltaTable

    return DeltaTable.forName(session, location.name) if location.name else DeltaTable.forPath(session, location.path)


def _append(changes: BatchChanges, location: TableLocation, fmt: WriteFormat, commit: SinkCommit) -> None:
    """The table's first commit: the rows the batch leaves, with the offsets (the append's own writer options)."""
    rows = changes.left()
    writer = (rows.write.format("delta").mode("append")
              .option("txnAppId", app_id(commit.sink_id)).option("txnVersion", commit.batch)
              .option("userMetadata", commit.to_json()).option("mergeSchema", "true"))
    if fmt.partition_by:
        writer = writer.partitionBy(*fmt.partition_by)
    save_to(writer, location)


def _merge(spark, changes: BatchChanges, location: TableLocation, commit: SinkCommit, table_schema: Any) -> None:
    """MERGE the batch's last change per key, in a session of its own that carries the commit's `txn`."""
    session = isolated_session(spark)
    session.conf.set(TXN_APP_ID, app_id(commit.sink_id))
    session.conf.set(TXN_VERSION, str(commit.batch))
    session.conf.set(USER_METADATA, commit.to_json())
    session.conf.set(AUTO_MERGE, "true")  # a column added at the source is added to the table
    if changes.records == 0:
        # An empty source: the commit still has to carry the position (a batch of transaction markers alone).
        empty = session.createDataFrame([], table_schema)
        save_to(empty.write.format("delta").mode("append"), location)
        return
    c = merge_clauses(changes, _quoted)
    assert changes.rows is not None
    merge = _delta_table(session, location).alias("t").merge(changes.rows.alias("s"), c.on)
    if c.marks is not None:
        merge = merge.whenMatchedUpdate(condition=c.delete_when, set=c.marks)
    else:
        merge = merge.whenMatchedDelete(condition=c.delete_when)
    if c.updates:
        merge = merge.whenMatchedUpdate(condition=c.update_when, set=c.updates)
    merge = merge.whenNotMatchedInsert(condition=c.insert_when, values=c.values)
    if changes.truncated and c.truncate_marks is not None:
        merge = merge.whenNotMatchedBySourceUpdate(set=c.truncate_marks)
    elif changes.truncated:
        merge = merge.whenNotMatchedBySourceDelete()
    merge.execute()


def isolated_session(spark):
    """A clone of `spark` (its settings, catalog and functions as they are now) whose SQL confs are its own."""
    from pyspark.sql import SparkSession

    # cloneSession is Spark's own (package-private in Scala, callable from py4j); newSession would drop the
    # runtime settings the caller's writes see (a store's credentials set with spark.conf.set).
    return SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())


def _quoted(column: str) -> str:
    return f"`{column}`"

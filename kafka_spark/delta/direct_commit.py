"""The direct writer's driver side: one Spark job writes the batch's files, one delta-rs transaction commits them.

The commit holds the files' `add` actions, the sink's `txn` (`txnAppId` = the sink's app id, `txnVersion`
= the batch) and, as `commitInfo.userMetadata`, the batch's JSON exactly as Spark's writer records it, so
`position.py` reads both writers' commits alike. Delta on Spark skips a write whose `txn` version the
table has already recorded; delta-rs does not, so the snapshot is checked here, and delta-rs's conflict
check refuses a commit when another one with the same `txnAppId` landed after that snapshot.

A batch whose tasks found a JSON value they cannot parse exactly as Spark's `from_json` does, or records
for the dead-letter table, is written through Spark's writer instead (`SparkWriterNeeded`): the files the
other tasks wrote are deleted, and the result says why.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.delta.position import materialize, write_pending
from kafka_spark.delta.spark_commit import committed, write_commit
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import BadRecordError, BatchAlreadyCommittedError, ConcurrentWriterError
from kafka_spark.sink.freshness import files_freshness
from kafka_spark.sink.parquet.files import FILE_ROWS_DDL, FileSpec, delete_files
from kafka_spark.sink.parquet.routes import routed_options
from kafka_spark.sink.parquet.stats import stats_columns
from kafka_spark.sink.plan import BatchPlan, merged_plan
from kafka_spark.sink.position import SinkCommit, app_id, now_ms
from kafka_spark.sink.read_plan import read_plan
from kafka_spark.sink.results import LoadResult

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from kafka_spark.delta.writer_choice import DirectTarget
    from kafka_spark.sink.options import KafkaSource, LoadOptions
    from kafka_spark.sink.read_plan import PlanReader

log = logging.getLogger(__name__)

WRITER = "kafka_spark.sink.parquet.files:write_range"


def file_spec(target: DirectTarget) -> FileSpec:
    """What the tasks need to write the table's files."""
    table = target.table
    config: dict[str, str | None] = dict(table.metadata().configuration) if table is not None else {}
    features = set((table.protocol().writer_features or []) if table is not None else [])
    # Delta on Spark marks its statistics tight on tables with deletion vectors.
    return FileSpec(target.location.delta_rs_uri or target.location.path, target.schema_json,
                    stats_columns(target.schema_json, config, target.partition_columns),
                    tight_bounds="deletionVectors" in features, storage_options=dict(target.location.storage_options),
                    partition_columns=target.partition_columns, time_zone=target.time_zone,
                    compression=target.compression, value_schema=target.value_schema)


def direct_options(spec: FileSpec) -> dict[str, str]:
    """The internal `pykafka` options that make a read write `spec`'s files (batch.py's `directWriteTo`)."""
    options = {"directWriteTo": json.dumps({"writer": WRITER, "rows": FILE_ROWS_DDL,
                                            "spec": json.loads(spec.to_json()), "views": spec.takes_views})}
    if spec.storage_options:
        options["directWriteSecret"] = json.dumps(dict(spec.storage_options))
    return options


class SparkWriterNeeded(Exception):
    """A batch the direct writer leaves to Spark's writer (`reason`); nothing of it was committed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class DirectJob:
    """One table's part of a direct write: its options, the batch's commit, where it commits, the table's
    version before the write (-1: no table yet) and whether the batch still needs writing."""

    options: LoadOptions
    commit: SinkCommit
    target: DirectTarget
    before: int = -1
    writes: bool = True


def begin_job(options: LoadOptions, commit: SinkCommit, target: DirectTarget) -> DirectJob:
    """Record the batch as pending and find whether the table already holds it (Delta on Spark skips such a
    write by its `txn`; delta-rs does not, so it is checked here)."""
    write_pending(target.location, commit)
    table = target.table
    before = table.version() if table is not None else -1
    recorded = table.transaction_version(app_id(options.sink_id)) if table is not None else None
    return DirectJob(options, commit, target, before, recorded is None or recorded < commit.batch)


def write_direct(spark: Any, options: LoadOptions, plan: BatchPlan, commit: SinkCommit,
                 target: DirectTarget, read: PlanReader | None = None) -> LoadResult:
    """Write the plan's records as the table's files in its tasks and commit them with `commit` in one
    Delta transaction; detect a batch someone else committed, as Spark's writer does. `read(extra)` reads
    the plan with the direct-write options `extra` (by default `read_plan`, from the brokers)."""

    job = begin_job(options, commit, target)
    rows: list[dict[str, Any]] = []
    if job.writes:
        crash_point("before-write")
        if plan.reading:
            extra = direct_options(file_spec(target))
            frame = read(extra) if read is not None else read_plan(spark, options.source, plan, extra)
            rows = [r.asDict() for r in frame.collect()]
    try:
        return finish_job(job, rows)
    except SparkWriterNeeded as exc:
        df = read(None) if read is not None else read_plan(spark, options.source, plan)
        return written_by_spark(spark, options, df, commit, target, exc.reason, f"batch {commit.batch}")


def written_by_spark(spark: Any, options: LoadOptions, df: Any, commit: SinkCommit, target: DirectTarget,
                     reason: str, label: str) -> LoadResult:
    """The batch `df` committed through Spark's writer, the direct writer having left it (`reason`)."""

    log.info("%s %s: Spark's writer, since %s", options.table, label, reason)
    result = write_commit(spark, options.target, options.format, options.parsing, df, commit, label, target.location)
    if target.table is not None:
        target.table.update_incremental()  # the next direct commit of a stream starts from this one
    result.writer, result.writer_reason = "spark", reason
    result.retries += 1  # the direct write's files were written and dropped first
    return result


def write_tables(spark: Any, source: KafkaSource, parts: Sequence[tuple[str, BatchPlan, DirectJob]]
                 ) -> dict[str, list[dict[str, Any]]]:
    """Write the ranges of several topics' tables (`(topic, plan, job)`, each topic its own table) in one
    read: each task writes its range as its topic's table's files. The file rows by topic."""

    writing = [(topic, plan, job) for topic, plan, job in parts if job.writes and plan.reading]
    found: dict[str, list[dict[str, Any]]] = {topic: [] for topic, _, _ in parts}
    if not writing:
        return found
    crash_point("before-write")
    merged = merged_plan([plan for _, plan, _ in writing])
    specs = {topic: file_spec(job.target) for topic, _, job in writing}
    read = dataclasses.replace(source, topics=sorted(specs), decoding={})
    for row in read_plan(spark, read, merged, routed_options(specs)).collect():
        found[row["topic"]].append(row.asDict())
    return found


def finish_job(job: DirectJob, rows: list[dict[str, Any]]) -> LoadResult:
    """Commit the files the tasks wrote for `job` (unless the table already holds its batch) and return what
    the table now holds for it: the winner's offsets, or BatchAlreadyCommittedError for another run's."""

    commit, target = job.commit, job.target
    sink_id, location = job.options.sink_id, target.location
    fresh = None
    if job.writes:
        reason = _spark_reason(rows, job.options)
        if reason is not None:
            delete_files(file_spec(target), [r["path"] for r in rows if r.get("path")])
            raise SparkWriterNeeded(reason)
        _refuse_bad_records(rows, job.options, commit.batch)
        fresh = files_freshness(rows)
        # the commit's metadata says how fresh its rows are, for `kafka-spark delta-offsets` and other readers
        _commit(target, rows, dataclasses.replace(commit, freshness_ms=fresh.summary() if fresh else None), job.before)
        crash_point("after-commit")
        if target.table is not None:
            target.table.update_incremental()  # a cached target commits its next batch on top of this one
            maintain_log(target.table)
    state = location.state()
    state.refresh()
    winner, _ = committed(location, state, sink_id, commit.batch, job.before)
    if winner.run_id != commit.run_id:
        raise BatchAlreadyCommittedError(
            f"batch {commit.batch} of sink {sink_id!r} was already committed to {location} by run {winner.run_id}; "
            "this run's write was skipped, so nothing was written twice", commit.batch, winner.run_id)
    materialize(location, winner)
    version = state.version_reaching(app_id(sink_id), commit.batch, job.before)
    return LoadResult("committed", sink_id, commit.batch, rows=sum(r["records"] or 0 for r in rows),
                      bytes=sum(r["size"] or 0 for r in rows) if job.writes else 0,
                      table_version=version, start=dict(commit.start_offsets), offsets=winner.offsets,
                      run_id=commit.run_id, writer="direct", freshness=fresh)


# Delta on Spark's default `delta.checkpointInterval` (delta-rs's own default is 100 commits).
CHECKPOINT_INTERVAL = 10


def maintain_log(table: DeltaTable) -> None:
    """What Delta on Spark does after a commit, for a table at its new version: a checkpoint every
    `delta.checkpointInterval` versions, then the log entries older than `delta.logRetentionDuration`
    removed (unless `delta.enableExpiredLogCleanup` is false), so the log grows no more than Spark's."""
    version = table.version()
    config = table.metadata().configuration
    interval = int(config.get("delta.checkpointInterval") or CHECKPOINT_INTERVAL)
    if version <= 0 or version % max(interval, 1):
        return
    table.create_checkpoint()
    if (config.get("delta.enableExpiredLogCleanup") or "true").strip().lower() != "false":
        table.cleanup_metadata()



def _spark_reason(rows: list[dict[str, Any]], options: LoadOptions) -> str | None:
    """Why the batch these file rows report on goes to Spark's writer, or None."""
    reports = sorted((f["offset"], f["topic"], f["partition"], f["reason"], bool(f.get("spark")))
                      for r in rows if r.get("firstBad") for f in (json.loads(r["firstBad"]),))
    unsure = [r for r in reports if r[4]]
    if unsure:
        offset, topic, partition, why, _ = unsure[0]
        return (f"the value of {topic} [{partition}] offset {offset} is left to Spark's from_json ({why}); "
                "the batch was written by Spark's writer")
    if reports and options.dead_letter is not None:
        count = sum(r["badRecords"] or 0 for r in rows if r.get("firstBad"))
        return f"the batch has {count} record(s) for the dead-letter table, which Spark's writer writes"
    return None


def _refuse_bad_records(rows: list[dict[str, Any]], options: LoadOptions, batch: int) -> None:
    """BadRecordError, as Spark's writer raises it, when some task found records that do not decode."""
    bad = [r for r in rows if r.get("firstBad")]
    if not bad:
        return
    firsts = sorted((f["offset"], f["topic"], f["partition"], f["reason"]) for f in (json.loads(r["firstBad"])
                                                                                   for r in bad))
    count = sum(r["badRecords"] for r in bad)
    offset, topic, partition, reason = firsts[0]
    others = "; ".join(f"{t} [{p}] offset {o}" for o, t, p, _ in firsts[1:6])
    raise BadRecordError(
        f"{count} record(s) of batch {batch} of sink {options.sink_id!r} do not decode with their registry "
        f"schema; the first is {topic} [{partition}] offset {offset}: {reason}"
        + (f" (first bad offset of the other partitions: {others})" if others else "")
        + ". Nothing was committed. Set dead_letter (--dead-letter) to a Delta table to write such records "
        "there and load the rest.", topic, partition, offset, reason, count)


def _commit(target: DirectTarget, rows: list[dict[str, Any]], commit: SinkCommit, before: int) -> None:
    from deltalake import CommitProperties, PostCommitHookProperties, Schema, Transaction
    from deltalake.exceptions import CommitFailedError, DeltaError
    from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

    adds = [AddAction(r["path"], r["size"], json.loads(r["partitionValues"]), r["modificationTime"], True, r["stats"])
            for r in rows]
    # commitInfo as Delta on Spark writes an append's: the batch's JSON, a blind append, its metrics.
    info: dict[str, Any] = {
        "userMetadata": commit.to_json(), "isBlindAppend": True,
        "operationMetrics": {"numFiles": str(len(rows)), "numOutputRows": str(sum(r["records"] for r in rows)),
                             "numOutputBytes": str(sum(r["size"] for r in rows))},
    }
    if before >= 0:
        info["readVersion"] = before
    properties = CommitProperties(custom_metadata=info,
                                  app_transactions=[Transaction(app_id(commit.sink_id), commit.batch, now_ms())])
    location = target.location
    try:
        if target.table is None:
            create_table_with_add_actions(location.delta_rs_uri or location.path, Schema.from_json(target.schema_json),
                                          adds, mode="error", partition_by=list(target.partition_columns) or None,
                                          storage_options=dict(location.storage_options) or None,
                                          commit_properties=properties)
        else:
            actions: list[AddAction | RemoveAction] = [*adds]
            # Checkpoints and log cleanup on Delta on Spark's schedule instead (maintain_log).
            target.table.create_write_transaction(actions, "append", target.table.schema(),
                                                  commit_properties=properties,
                                                  post_commithook_properties=PostCommitHookProperties(
                                                      create_checkpoint=False, cleanup_expired_logs=False))
    except (CommitFailedError, DeltaError) as exc:
        text = str(exc)
        if "Concurrent" in text or "already exists" in text.lower():
            raise ConcurrentWriterError(
                f"another load committed to {location} for sink {commit.sink_id!r} at the same time; this run's "
                f"batch {commit.batch} was not written. Run one load per sink and table at a time.") from None
        raise

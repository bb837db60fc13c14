"""Spark's Delta writer committing a batch's rows with its offsets (`txn` + `userMetadata`) in one commit,
and the committed truth read back from the log."""

from __future__ import annotations

from typing import Any

from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.dead_letter import ParsedValues
from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.delta.location import TableLocation, locate, path_location
from kafka_spark.delta.position import commit_of, logged_commit, materialize, write_pending
from kafka_spark.delta.table_state import TableState
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import BatchAlreadyCommittedError, ConcurrentWriterError
from kafka_spark.sink.freshness import ObservedFreshness
from kafka_spark.sink.options import SinkTarget, ValueParsing, WriteFormat
from kafka_spark.sink.position import SinkCommit, app_id
from kafka_spark.sink.progress import Progress
from kafka_spark.sink.read_plan import apply_transform
from kafka_spark.sink.results import LoadResult
from kafka_spark.spark.versions import require_delta_spark


def write_commit(spark, target: SinkTarget, fmt: WriteFormat, parsing: ValueParsing, df, commit: SinkCommit,
                 label: str, location: TableLocation | None = None) -> LoadResult:
    """Append `df` (transformed) with `commit` as Delta `txn` + `userMetadata`, in one Delta commit.

    Shared by batch loads and micro-batches. `commit` is recorded as pending first; afterwards the
    committed truth is read back from the Delta log and kept beside the table. `location` is
    `target.table` located, when the caller has done it (a catalog table is created here if need be).
    """
    require_delta_spark(f"{target.table} {label}: Spark's Delta writer", spark)
    if parsing.value_schema is None and not parsing.decoded:
        return _write_commit(spark, target, fmt, df, commit, label, None, location)
    values = ParsedValues(parsing, target.sink_id, df)
    try:
        return _write_commit(spark, target, fmt, values.main, values.counted(commit), label, values, location)
    finally:
        values.close()


def _write_commit(spark, target: SinkTarget, fmt: WriteFormat, df, commit: SinkCommit, label: str,
                  values: ParsedValues | None, location: TableLocation | None) -> LoadResult:
    sink_id = target.sink_id
    out = apply_transform(df, fmt.transform)
    # A catalog table's first write creates it from the output's schema first: its location must be
    # known before the pending record is written there.
    location = location or locate(target.table, spark) or path_location(
        create_catalog_table(spark, target.table, out.schema, fmt.partition_by), spark, name=target.table)
    table = str(location)
    write_pending(location, commit)
    state = location.state()
    before = state.refresh()
    before = -1 if before is None else before
    observed = ObservedFreshness(out)
    writer = (observed.df.write.format("delta").mode("append")
              .option("txnAppId", app_id(sink_id)).option("txnVersion", commit.batch)
              .option("userMetadata", commit.to_json()))
    if fmt.merge_schema:
        writer = writer.option("mergeSchema", "true")
    if fmt.partition_by:
        writer = writer.partitionBy(*fmt.partition_by)
    crash_point("before-write")
    try:
        if fmt.progress:
            with Progress(spark, f"{sink_id} {label}"):
                save_to(writer, location)
        else:
            save_to(writer, location)
    except Exception as exc:  # Delta's conflict errors come through py4j as several types
        if values is not None:
            values.explain(exc, commit.batch)
        if is_conflict(exc):
            raise ConcurrentWriterError(
                f"another load committed to {table} for sink {sink_id!r} at the same time; this run's batch "
                f"{commit.batch} was not written. Run one load per sink and table at a time.") from None
        raise
    winner, info = settled(location, state, commit, before, "write, so nothing was written twice")
    if values is not None and winner.dead_letters:
        crash_point("before-dead-letters")
        values.write(winner)
    version = state.version_reaching(app_id(sink_id), commit.batch, before)
    return LoadResult("committed", sink_id, commit.batch, rows=_output_rows(info), bytes=_output_bytes(info),
                      table_version=version,
                      start=dict(commit.start_offsets), offsets=winner.offsets, run_id=commit.run_id,
                      dead_letters=winner.dead_letters, freshness=observed.freshness(_committed_at(info)))


def save_to(writer, location: TableLocation) -> None:
    """Write by name to a catalog table (so the catalog sees the write), else to the path."""
    if location.name:
        writer.saveAsTable(location.name)
    else:
        writer.save(location.path)


_CONFLICT_MARKERS = ("Concurrent", "CONCURRENT", "ProtocolChanged", "MetadataChanged", "PROTOCOL_CHANGED",
                     "METADATA_CHANGED", "FileAlreadyExists")


def is_conflict(exc: BaseException) -> bool:
    """Whether Delta refused the commit because another writer committed first."""
    text = f"{type(exc).__name__} {str(exc)[:2000]}"
    return any(m in text for m in _CONFLICT_MARKERS)


def settled(location: TableLocation, state: TableState, commit: SinkCommit, before: int,
            skipped: str) -> tuple[SinkCommit, dict[str, Any] | None]:
    """After a write returned: the commit the table holds for `commit`'s batch, kept beside the table; another
    run's is BatchAlreadyCommittedError (Delta skipped this run's `skipped`)."""
    crash_point("after-commit")
    state.refresh()
    sink_id = commit.sink_id
    winner, info = committed(location, state, sink_id, commit.batch, before)
    if winner.run_id != commit.run_id:
        raise BatchAlreadyCommittedError(
            f"batch {commit.batch} of sink {sink_id!r} was already committed to {location} by run {winner.run_id}; "
            f"Delta skipped this run's {skipped}", commit.batch, winner.run_id)
    materialize(location, winner)
    return winner, info


def committed(location: TableLocation, state: TableState, sink_id: str, batch: int,
               before: int) -> tuple[SinkCommit, dict[str, Any] | None]:
    """The commit holding `batch`: a commit after version `before` (this run's, or a racing run's) or an
    earlier one when Delta skipped the write; with its commitInfo when it is recent."""
    found = logged_commit(state, sink_id, batch, since=before + 1)
    if found is not None:
        return found
    recorded = state.txn_versions([app_id(sink_id)]).get(app_id(sink_id))
    if recorded is None or recorded < batch:
        raise DeltaLogError(f"{state.location}: the write returned but batch {batch} of {sink_id!r} "
                            "is not in the Delta log")
    return commit_of(location, state, sink_id, batch), None


def _output_rows(info: dict[str, Any] | None) -> int:
    metrics = (info or {}).get("operationMetrics") or {}
    return int(metrics.get("numOutputRows", 0))


def _output_bytes(info: dict[str, Any] | None) -> int:
    metrics = (info or {}).get("operationMetrics") or {}
    return int(metrics.get("numOutputBytes", 0))


def _committed_at(info: dict[str, Any] | None) -> int | None:
    """The commit's time (its commitInfo's), for its rows' freshness; None: now."""
    stamp = (info or {}).get("timestamp")
    return int(stamp) if isinstance(stamp, (int, float)) else None

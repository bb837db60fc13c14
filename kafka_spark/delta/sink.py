"""Kafka -> Delta batch loads with the offsets committed in the same Delta transaction as the rows."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.client.callables import import_callable
from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.dead_letter import ParsedValues, check_options, reconcile
from kafka_spark.delta.direct import choose_writer
from kafka_spark.delta.direct_commit import write_direct
from kafka_spark.delta.errors import BatchAlreadyCommittedError, ConcurrentWriterError, DeltaLogError
from kafka_spark.delta.location import TableLocation, locate, path_location
from kafka_spark.delta.options import KafkaSource, LoadOptions, SinkTarget, Transform, ValueParsing, WriteFormat
from kafka_spark.delta.plan import BatchPlan, plan_batch
from kafka_spark.delta.position import (
    SinkCommit,
    app_id,
    check_sink_id,
    commit_of,
    logged_commit,
    materialize,
    now_ms,
    sink_positions,
    write_pending,
)
from kafka_spark.delta.progress import Progress
from kafka_spark.delta.publish import check_publish_options, publish_committed
from kafka_spark.delta.table_state import TableState
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_to_json, ranges_to_json
from kafka_spark.spark.options import PLANNED_RANGES
from kafka_spark.spark.redaction import redact_secret_options

log = logging.getLogger(__name__)

# Test hook: kill the process at a named point of the commit protocol, to prove crash safety.
CRASH_ENV = "KAFKA_SPARK_CRASH_AT"


@dataclass
class LoadResult:
    """What one run did: `status` is 'committed', 'up-to-date' or, for one table of a routed load, 'failed'
    (with `error`). `table` and `topic` are set for a routed load's tables."""

    status: str
    sink_id: str
    batch: int | None
    rows: int = 0
    seconds: float = 0.0
    table_version: int | None = None
    start: dict[TopicPartition, int] = field(default_factory=dict)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    lost: dict[TopicPartition, int] = field(default_factory=dict)
    run_id: str = ""
    dead_letters: int = 0
    table: str = ""
    topic: str | None = None
    error: str | None = None
    writer: str = "spark"  # the writer that served the table, and why Spark's when 'auto' was asked
    writer_reason: str | None = None

    @property
    def records_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "status": self.status, "sink": self.sink_id, "batch": self.batch, "rows": self.rows,
            "seconds": round(self.seconds, 3), "records_per_second": round(self.records_per_second, 1),
            "table_version": self.table_version, "start": json.loads(offsets_to_json(self.start)),
            "offsets": json.loads(offsets_to_json(self.offsets)),
            "lost": json.loads(offsets_to_json(self.lost)), "run": self.run_id, "dead_letters": self.dead_letters,
            **({"table": self.table} if self.table else {}), **({"error": self.error} if self.error else {}),
            "writer": self.writer, **({"writer_reason": self.writer_reason} if self.writer_reason else {}),
        }


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def load(spark, options: LoadOptions) -> LoadResult:
    """Load everything new since the table's committed offsets (up to `max_records`) in one Delta commit."""
    if options.routing is not None:
        raise ConfigError("options with a routing load many tables: call load_tables, which reports each table")
    if options.log_dirs is not None:
        from kafka_spark.delta.log_load import load_log_dirs

        return load_log_dirs(spark, options)
    started = time.monotonic()
    source, target, parsing, publishing = options.source, options.target, options.parsing, options.publishing
    sink_id = check_sink_id(target.sink_id)
    check_options(spark, target, parsing)
    check_publish_options(source, publishing)
    run_id = uuid.uuid4().hex[:12]
    location = locate(target.table, spark)
    previous, others = sink_positions(location, sink_id)
    reconcile(spark, source, target, parsing, previous)
    with Cluster(source.kafka) as cluster:
        plan = plan_batch(cluster, previous, others, source.topics, source.pattern, source.starting,
                          options.max_records, source.fail_on_data_loss, source.start_zookeeper_group)
        if plan.size == 0 and previous is not None and not plan.lost:
            publish_committed(publishing, previous.offsets, cluster)  # in case the last run died before it
            return LoadResult("up-to-date", sink_id, previous.batch, seconds=time.monotonic() - started,
                              offsets=previous.offsets, run_id=run_id)
        result = commit_batch(spark, options, plan, run_id, location)
        publish_committed(publishing, result.offsets, cluster)
    result.seconds = time.monotonic() - started
    return result


def read_plan(spark, source: KafkaSource, plan: BatchPlan, extra: Mapping[str, str] | None = None):
    """The DataFrame of exactly the plan's offsets, through `format("pykafka")`, in the plan's tasks (`extra`:
    further `pykafka` options)."""
    reading = plan.reading
    redact_secret_options(spark)
    if not reading:
        # Nothing to read but the position still moves (only lost offsets): an empty frame.
        if source.decoding:
            return spark.createDataFrame([], schema=decoded_ddl(source))
        from kafka_spark.records import kafka_schema

        return spark.createDataFrame(kafka_schema(source.include_headers).empty_table())
    assign: dict[str, list[int]] = {}
    for tp in reading:
        assign.setdefault(tp.topic, []).append(tp.partition)
    # The plan's own ranges go along, so the reader reads them as planned instead of planning again.
    return (spark.read.format("pykafka").options(**source.client_options())
            .option("assign", json.dumps(assign))
            .option("startingOffsets", offsets_to_json({tp: plan.start[tp] for tp in reading}))
            .option("endingOffsets", offsets_to_json({tp: plan.end[tp] for tp in reading}))
            .option(PLANNED_RANGES, ranges_to_json(plan.ranges()))
            .options(**source.read_flags()).options(**(extra or {})).load())


def decoded_ddl(source: KafkaSource) -> str:
    """The schema a decoding read of `source` has (its subjects' latest schemas), for a batch with no rows."""
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads
    from kafka_spark.spark.schema import kafka_ddl

    payloads = payload_options(source.read_flags())
    assert payloads is not None
    return kafka_ddl(source.include_headers, plan_payloads(payloads, tuple(source.topics)))


_VIEW_LOCK = threading.Lock()
# The DataFrame of a plan's records, given further source options (commit_batch's `read`).
PlanReader = Callable[[Mapping[str, str] | None], Any]


def apply_transform(df, transform: str | Transform | None):
    """Apply a Python callable, a `module:function` path, or a SQL query over the view `kafka`."""
    if transform is None:
        return df
    if callable(transform):
        return transform(df)
    text = transform.strip()
    if is_sql(text):
        # The view and the query use the frame's own session: a micro-batch's frame lives in the
        # stream's session, not the one that started the query. spark.sql resolves the view while
        # it analyses the query, so the result keeps this batch's data after the view is replaced.
        session = df.sparkSession
        with _VIEW_LOCK:
            df.createOrReplaceTempView("kafka")
            return session.sql(text)
    return resolve_callable(text)(df)


def is_sql(text: str) -> bool:
    """Whether a transform's text is a SQL query (else it names a `module:function`)."""
    return text.strip().lower().startswith(("select", "with"))


def resolve_transform(transform: str | Transform | None) -> str | Transform | None:
    """A transform checked before any Spark work: SQL as it is, a `module:function` path imported now."""
    if transform is None or callable(transform) or is_sql(transform):
        return transform
    return resolve_callable(transform.strip())


def resolve_callable(path: str) -> Transform:
    """The function named by `module:function`, or a ConfigError saying what is wrong."""
    return import_callable(path, f"transform {path!r}",
                           f"transform {path!r}: expected a SQL SELECT over the view `kafka` or 'module:function'")


def commit_batch(spark, options: LoadOptions, plan: BatchPlan, run_id: str,
                 location: TableLocation | None = None, read: PlanReader | None = None) -> LoadResult:
    """Write the plan's rows and offsets in one Delta commit; detect a batch someone else committed.

    `read(extra)` gives the DataFrame of the plan's records with the further source options `extra` (the
    direct writer's); by default `read_plan`, from the brokers."""
    commit = SinkCommit(sink_id=options.sink_id, batch=plan.batch, offsets=plan.committed_offsets(),
                        start_offsets=dict(plan.start), run_id=run_id, committed_at_ms=now_ms())
    choice = choose_writer(spark, options, location)
    if choice.target is not None:
        result = write_direct(spark, options, plan, commit, choice.target, read)
    else:
        df = read(None) if read is not None else read_plan(spark, options.source, plan)
        result = write_commit(spark, options.target, options.format, options.parsing, df, commit,
                              f"batch {plan.batch}", location)
    result.lost = dict(plan.lost)
    if result.writer_reason is None:  # else the direct writer left this batch to Spark's, saying why
        result.writer, result.writer_reason = choice.writer, choice.reason
    return result


def write_commit(spark, target: SinkTarget, fmt: WriteFormat, parsing: ValueParsing, df, commit: SinkCommit,
                 label: str, location: TableLocation | None = None) -> LoadResult:
    """Append `df` (transformed) with `commit` as Delta `txn` + `userMetadata`, in one Delta commit.

    Shared by batch loads and micro-batches. `commit` is recorded as pending first; afterwards the
    committed truth is read back from the Delta log and kept beside the table. `location` is
    `target.table` located, when the caller has done it (a catalog table is created here if need be).
    """
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
    writer = (out.write.format("delta").mode("append")
              .option("txnAppId", app_id(sink_id)).option("txnVersion", commit.batch)
              .option("userMetadata", commit.to_json()))
    if fmt.merge_schema:
        writer = writer.option("mergeSchema", "true")
    if fmt.partition_by:
        writer = writer.partitionBy(*fmt.partition_by)
    _crash_point("before-write")
    try:
        if fmt.progress:
            with Progress(spark, f"{sink_id} {label}"):
                _save(writer, location)
        else:
            _save(writer, location)
    except Exception as exc:  # Delta's conflict errors come through py4j as several types
        if values is not None:
            values.explain(exc, commit.batch)
        if _is_conflict(exc):
            raise ConcurrentWriterError(
                f"another load committed to {table} for sink {sink_id!r} at the same time; this run's batch "
                f"{commit.batch} was not written. Run one load per sink and table at a time.") from None
        raise
    _crash_point("after-commit")
    state.refresh()
    winner, info = _committed(location, state, sink_id, commit.batch, before)
    if winner.run_id != commit.run_id:
        raise BatchAlreadyCommittedError(
            f"batch {commit.batch} of sink {sink_id!r} was already committed to {table} by run {winner.run_id}; "
            "Delta skipped this run's write, so nothing was written twice", commit.batch, winner.run_id)
    materialize(location, winner)
    if values is not None and winner.dead_letters:
        _crash_point("before-dead-letters")
        values.write(winner)
    version = state.version_reaching(app_id(sink_id), commit.batch, before)
    return LoadResult("committed", sink_id, commit.batch, rows=_output_rows(info), table_version=version,
                      start=dict(commit.start_offsets), offsets=winner.offsets, run_id=commit.run_id,
                      dead_letters=winner.dead_letters)


def _save(writer, location: TableLocation) -> None:
    """Write by name to a catalog table (so the catalog sees the write), else to the path."""
    if location.name:
        writer.saveAsTable(location.name)
    else:
        writer.save(location.path)


_CONFLICT_MARKERS = ("Concurrent", "CONCURRENT", "ProtocolChanged", "MetadataChanged", "PROTOCOL_CHANGED",
                     "METADATA_CHANGED", "FileAlreadyExists")


def _is_conflict(exc: BaseException) -> bool:
    """Whether Delta refused the commit because another writer committed first."""
    text = f"{type(exc).__name__} {str(exc)[:2000]}"
    return any(m in text for m in _CONFLICT_MARKERS)


def _committed(location: TableLocation, state: TableState, sink_id: str, batch: int,
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

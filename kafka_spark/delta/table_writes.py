"""The writers of a routed batch's tables: the direct-written ones from one read, the others through Spark's.

Each table gets the writer its options ask for (`choose_writer`: `writer="spark"|"direct"|"auto"`). The
tables the direct writer serves and whose values stay bytes have their files written by one `pykafka`
read of all their ranges (`write_tables`), one Spark job for the batch however many tables there are;
each is then committed on its own through delta-rs. A direct-written table whose values a registry format
decodes writes its own ranges (one schema per read); the others go through Spark's writer (`commit_table`).
A table whose writer could not be chosen, or whose files could not be written, fails alone, by name.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, MutableMapping
from functools import partial
from typing import TYPE_CHECKING, Any

from kafka_spark.delta.direct_commit import (
    DirectJob,
    SparkWriterNeeded,
    begin_job,
    finish_job,
    write_direct,
    write_tables,
    written_by_spark,
)
from kafka_spark.delta.merge_commit import merge_commit
from kafka_spark.delta.spark_commit import write_commit
from kafka_spark.delta.writer_choice import NEW_CATALOG_TABLE, WriterChoice, choose_writer
from kafka_spark.errors import ConfigError
from kafka_spark.sink.read_plan import read_plan
from kafka_spark.sink.table_format import TableWrites

if TYPE_CHECKING:
    from kafka_spark.delta.location import TableLocation
    from kafka_spark.sink.options import KafkaSource
    from kafka_spark.sink.plan import BatchPlan
    from kafka_spark.sink.position import SinkCommit
    from kafka_spark.sink.read_plan import PlanReader
    from kafka_spark.sink.results import LoadResult
    from kafka_spark.sink.routed import RoutedTable

log = logging.getLogger(__name__)


class RoutedWrites(TableWrites):
    """One routed batch's writers, table by table; `choices` may be kept between batches (a stream's), and
    a table's entry is dropped once it is stale (a table created by its first commit, or a failure)."""

    def __init__(self, spark: Any, source: KafkaSource,
                 choices: MutableMapping[str, WriterChoice] | None = None) -> None:
        self.spark, self.source = spark, source
        self.choices: MutableMapping[str, WriterChoice] = {} if choices is None else choices
        self._work: dict[str, tuple[BatchPlan, SinkCommit]] = {}
        self._errors: dict[str, Exception] = {}
        self._jobs: dict[str, tuple[str, DirectJob]] = {}
        self._files: dict[str, list[dict[str, Any]]] = {}

    def writer(self, routed: RoutedTable, location: TableLocation | None) -> WriterChoice | None:
        """The table's writer (kept in `choices`); None when it cannot be chosen (the error is reported with
        the table's commit)."""
        table = routed.table
        try:
            choice = self.choices.get(table)
            if choice is None:
                choice = self.choices[table] = _split_choice(routed) or choose_writer(self.spark, routed.options,
                                                                                     location)
            return choice
        except Exception as exc:
            self._errors[table] = exc
            return None

    def reads_own(self, routed: RoutedTable) -> bool:
        """Whether the table's rows are read from Kafka by its writer (direct, or decoded), not taken from
        the batch's rows."""
        choice = self.choices.get(routed.table)
        return routed.decoded or (choice is not None and (choice.target is not None or _task_changes(routed)))

    def add(self, routed: RoutedTable, plan: BatchPlan, commit: SinkCommit) -> None:
        """The table's batch (`plan`, `commit`); a direct job starts here (its pending record)."""
        table = routed.table
        self._work[table] = (plan, commit)
        choice = self.choices.get(table)
        # One read writes the files of single-topic tables; a table of several topics reads its own ranges.
        if (table in self._errors or choice is None or choice.target is None or routed.decoded
                or len(routed.topics) != 1):
            return
        try:
            self._jobs[table] = (routed.topic, begin_job(routed.options, commit, choice.target))
        except Exception as exc:  # reported with the table's commit
            self._errors[table] = exc

    def spark_rows(self, routed: RoutedTable) -> bool:
        """Whether the table's rows go through Spark's writer (so a shared Spark read serves them)."""
        choice = self.choices.get(routed.table)
        return (routed.table not in self._errors and choice is not None and choice.target is None
                and not _task_changes(routed))

    def write_files(self) -> None:
        """Write the files of every direct job in one read; a failed read fails each of those tables."""
        if not self._jobs:
            return
        parts = [(topic, self._work[table][0], job) for table, (topic, job) in self._jobs.items()]
        try:
            self._files = write_tables(self.spark, self.source, parts)
        except Exception as exc:
            log.error("the direct write of %d table(s) failed: %s", len(parts), exc)
            for table in self._jobs:
                self._errors[table] = exc

    def commit(self, routed: RoutedTable, rows: Callable[[], Any], label: str, location: TableLocation | None,
               progress: bool = True) -> LoadResult:
        """Commit the table's batch with its writer (`rows`: the table's DataFrame, for Spark's writer)."""
        table = routed.table
        if table in self._errors:
            self.choices.pop(table, None)
            raise self._errors[table]
        plan, commit = self._work[table]
        choice = self.choices[table]
        try:
            if table in self._jobs:
                topic, job = self._jobs[table]
                try:
                    result = finish_job(job, self._files.get(topic, []))
                except SparkWriterNeeded as exc:
                    assert choice.target is not None
                    result = written_by_spark(self.spark, routed.options, rows(), commit, choice.target, exc.reason,
                                              label)
            elif choice.target is not None:
                result = write_direct(self.spark, routed.options, plan, commit, choice.target)
            elif _task_changes(routed) and plan.reading:
                # the read tasks find the batch's last change per key; the SQL parse reads the plan again if
                # they cannot (delta/task_changes.py)
                read = partial(read_plan, self.spark, routed.options.source, plan)
                result = commit_table(self.spark, routed, None, commit, label, location, progress,
                                      choice.writer, read=read)
            else:
                result = commit_table(self.spark, routed, rows(), commit, label, location, progress, choice.writer)
        except Exception:
            self.choices.pop(table, None)  # chosen again, from the table as it is then
            raise
        if (choice.target is not None and choice.target.table is None) or choice.reason == NEW_CATALOG_TABLE:
            self.choices.pop(table, None)  # the commit created the table: its writer is chosen again next time
        result.table, result.topic = table, routed.topic
        if result.writer_reason is None:  # else the direct writer left this batch to Spark's, saying why
            result.writer, result.writer_reason = choice.writer, choice.reason
        return result


def _task_changes(routed: RoutedTable) -> bool:
    """Whether a change stream's table is merged from its read tasks' last changes (raw records)."""
    return routed.options.changes is not None and not routed.decoded


def _split_choice(routed: RoutedTable) -> WriterChoice | None:
    """Spark's writer for a split table (its rows are selected in Spark SQL); None for any other table."""
    if routed.route is None or routed.route.split is None:
        return None
    reason = "a split table's rows are selected in Spark SQL"
    if (routed.options.writer or "").strip().lower() == "direct":
        raise ConfigError(f"writer 'direct' cannot write to {routed.table}: {reason}; use writer 'spark' or 'auto'")
    return WriterChoice("spark", reason=reason if routed.options.writer != "spark" else None)


def commit_table(spark, routed: RoutedTable, df, commit: SinkCommit, label: str,
                 location: TableLocation | None, progress: bool = True, writer: str = "spark",
                 read: PlanReader | None = None) -> LoadResult:
    """Commit `df` (the table's rows, transformed by its settings) and `commit` to the table in one Delta commit
    (`progress=False`: without the table's own progress line, when the batch shows one for all; `read`: the
    plan's reader, for a change stream's read tasks to find its changes)."""
    opts = routed.options
    fmt = opts.format if progress else dataclasses.replace(opts.format, progress=False)
    changes = opts.changes
    if changes is not None:  # a change stream: its changes applied with a MERGE (merge_commit.py)
        one = routed.topics[0] if len(routed.topics) == 1 else None
        changes = dataclasses.replace(changes, history=changes.history_table(one))
        result = merge_commit(spark, opts.target, fmt, opts.parsing, changes, df, commit, label, location,
                              direct=writer == "direct", read=read)
    else:
        result = write_commit(spark, opts.target, fmt, opts.parsing, df, commit, label, location)
    result.table, result.topic = routed.table, routed.topic
    return result

"""A batch's Iceberg writers, table by table: the direct writer (the read's tasks write the data files),
pyiceberg's (the rows collected to the driver as Arrow and appended) or Spark's Iceberg writer (spark_append.py).

`LoadOptions.writer`: "auto" (the default) takes the direct writer (direct_append.py) where it serves the table
and pyiceberg's (batch_append.py) where it does not, the reason in the result and the log, and Spark's Iceberg
writer for a table whose files neither writes (ORC, Avro) when the session has Iceberg's runtime; "direct"
refuses a table it cannot serve; "pyiceberg" and "spark" always take theirs. A direct-written table reads its own
ranges; the others take their rows from the batch's Spark read (one shared read serves several tables of a routed
load).
Each commit is one snapshot of its table; with `dead_letter` (values parsed or decoded, so pyiceberg's writer)
the bad records follow in a snapshot of the dead-letter table (dead_letter.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, MutableMapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.batch_append import append_batch
from kafka_spark.iceberg.batch_rows import batch_frame, batch_rows, checked_rows, refusing_bad
from kafka_spark.iceberg.dead_letter import IcebergDeadLetters
from kafka_spark.iceberg.direct_append import PyicebergWriterNeeded, append_direct, direct_reason, table_reason
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.iceberg.spark_append import RUNTIME_MISSING, append_spark, has_iceberg_runtime
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.freshness import arrow_freshness
from kafka_spark.sink.progress import Progress
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.table_format import TableWrites

if TYPE_CHECKING:
    from kafka_spark.iceberg.catalog import IcebergCatalog
    from kafka_spark.sink.options import LoadOptions
    from kafka_spark.sink.plan import BatchPlan
    from kafka_spark.sink.position import SinkCommit
    from kafka_spark.sink.routed import RoutedTable

log = logging.getLogger(__name__)

# The writers as results name them, and what `writer` may ask for.
DIRECT, PYICEBERG, SPARK = "direct", "pyiceberg", "spark"
WRITERS = ("auto", DIRECT, PYICEBERG, SPARK)


@dataclass(frozen=True)
class IcebergChoice:
    """The writer of a table (DIRECT, PYICEBERG or SPARK), what was asked, and why another than the direct writer
    serves an 'auto'."""

    writer: str
    asked: str = "auto"
    reason: str | None = None
    files_checked: bool = False  # pyiceberg's for 'auto': the table's files were found to be Parquet


def choose_writer(options: LoadOptions, split: bool = False) -> IcebergChoice:
    """The writer of the table `options` write (`split`: a split route selects its rows); ConfigError for a
    writer that is not Iceberg's, or 'direct' for rows it cannot write."""
    asked = (options.writer or "auto").strip().lower()
    if asked not in WRITERS:
        raise ConfigError(f"writer {options.writer!r}: Iceberg tables are written by the direct writer, pyiceberg "
                          f"or Spark's Iceberg writer (give one of {', '.join(WRITERS)})")
    if asked in (PYICEBERG, SPARK):
        if asked == SPARK and options.parsing.dead_letter is not None:
            raise ConfigError(f"writer 'spark' with dead_letter: {options.table}'s dead letters are written by "
                              "pyiceberg's writer; use writer 'auto' or 'pyiceberg'")
        return IcebergChoice(asked, asked)
    reason = direct_reason(options, split)
    if reason is None:
        return IcebergChoice(DIRECT, asked)
    if asked == DIRECT:
        raise _direct_refused(options.table, reason)
    return IcebergChoice(PYICEBERG, asked, reason)


def _direct_refused(table: str | None, reason: str) -> ConfigError:
    return ConfigError(f"writer 'direct' cannot write to {table}: {reason}; use writer 'pyiceberg' or 'auto'")


class IcebergWrites(TableWrites):
    """One batch's Iceberg commits; `choices` keeps the tables' writers (a stream's, between batches)."""

    def __init__(self, spark: Any, catalog: IcebergCatalog, choices: MutableMapping[str, Any] | None = None) -> None:
        self.spark, self.catalog = spark, catalog
        self.choices: MutableMapping[str, Any] = {} if choices is None else choices
        self._work: dict[str, tuple[BatchPlan, SinkCommit]] = {}
        self._errors: dict[str, Exception] = {}

    def writer(self, routed: RoutedTable, location: Any) -> IcebergChoice | None:
        try:
            choice = self.choices.get(routed.table)
            if not isinstance(choice, IcebergChoice):
                split = routed.route is not None and routed.route.split is not None
                choice = self.choices[routed.table] = choose_writer(routed.options, split)
            return choice
        except ConfigError as exc:
            self._errors[routed.table] = exc
            return None

    def reads_own(self, routed: RoutedTable) -> bool:
        choice = self.choices.get(routed.table)
        return isinstance(choice, IcebergChoice) and choice.writer == DIRECT

    def add(self, routed: RoutedTable, plan: BatchPlan, commit: SinkCommit) -> None:
        self._work[routed.table] = (plan, commit)

    def spark_rows(self, routed: RoutedTable) -> bool:
        return routed.table not in self._errors and not self.reads_own(routed)

    def write_files(self) -> None:
        return None  # each direct table's read writes its files at its commit

    def commit(self, routed: RoutedTable, rows: Callable[[], Any], label: str, location: Any,
               progress: bool = True) -> LoadResult:
        """Commit the table's batch with its writer (`rows()`: the table's DataFrame, for pyiceberg's writer) in
        one snapshot with the batch's position."""
        if routed.table in self._errors:
            raise self._errors[routed.table]
        plan, commit = self._work[routed.table]
        opts = routed.options
        where = location or IcebergLocation(self.catalog, self.catalog.identifier(routed.table))
        choice = self.writer(routed, location)
        assert choice is not None
        reason = choice.reason
        shows = progress and opts.format.progress
        with Progress(self.spark, f"{opts.sink_id} {label}") if shows else nullcontext():
            if choice.writer == DIRECT:
                try:
                    done = append_direct(self.spark, where, opts, plan, commit)
                except PyicebergWriterNeeded as exc:
                    if choice.asked == DIRECT:
                        raise _direct_refused(routed.table, exc.reason) from None
                    choice = self._not_parquet(routed, exc.reason)
                    reason = choice.reason
                else:
                    return _result(routed, commit, done, DIRECT, None)
            elif choice.writer == PYICEBERG and choice.asked == "auto" and not choice.files_checked:
                choice = self._files_writer(routed, where, choice)
                reason = choice.reason
            if choice.writer == SPARK:
                frame, checked = batch_frame(opts, rows())
                with refusing_bad(checked, opts, commit.batch):
                    done = append_spark(self.spark, where, opts, frame, commit)
                return _result(routed, commit, done, SPARK, reason)
            if opts.parsing.dead_letter is not None:
                return self._with_dead_letters(routed, rows(), commit, where, reason)
            arrow = batch_rows(opts, rows(), commit.batch)
        counted = dataclasses.replace(commit, records=arrow.num_rows)
        winner, sequence = append_batch(where, arrow, counted, opts.format.partition_by, opts.format.merge_schema,
                                        opts.format.sort_by)
        return _appended(routed, commit, arrow, winner, sequence, reason)

    def _files_writer(self, routed: RoutedTable, where: IcebergLocation, choice: IcebergChoice) -> IcebergChoice:
        """`choice` (pyiceberg's, for 'auto'), or Spark's writer when the table's files are not Parquet."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            reason = table_reason(where.load())
        except NoSuchTableError:
            return choice  # pyiceberg creates it, with Parquet files
        if reason is not None:
            return self._not_parquet(routed, reason)
        # A stream's next batches need not load the table again for this.
        checked = self.choices[routed.table] = dataclasses.replace(choice, files_checked=True)
        return checked

    def _not_parquet(self, routed: RoutedTable, reason: str) -> IcebergChoice:
        """Spark's writer for a table whose files pyiceberg does not write (kept for the stream's next batches);
        ConfigError without Iceberg's Spark runtime."""
        if routed.options.parsing.dead_letter is not None or not has_iceberg_runtime(self.spark):
            why = RUNTIME_MISSING if routed.options.parsing.dead_letter is None else \
                "a dead-letter table is written by pyiceberg's writer"
            raise ConfigError(f"{routed.table}: {reason}, as pyiceberg's; {why}")
        log.info("%s: Spark's Iceberg writer, since %s", routed.table, reason)
        choice = self.choices[routed.table] = IcebergChoice(SPARK, "auto", reason)
        return choice

    def _with_dead_letters(self, routed: RoutedTable, df: Any, commit: SinkCommit, where: IcebergLocation,
                           reason: str | None) -> LoadResult:
        """pyiceberg's writer with a dead-letter table: the good rows and the count of the bad ones in the table's
        snapshot, then the bad ones in the dead-letter table (dead_letter.py)."""
        opts = routed.options
        values = IcebergDeadLetters(self.catalog, opts.parsing, opts.sink_id, df)
        try:
            arrow = checked_rows(opts, values)
            counted = dataclasses.replace(values.counted(commit), records=arrow.num_rows)
            winner, sequence = append_batch(where, arrow, counted, opts.format.partition_by,
                                            opts.format.merge_schema, opts.format.sort_by)
            if winner.dead_letters:
                crash_point("before-dead-letters")
                values.write(winner)
        finally:
            values.close()
        return _appended(routed, commit, arrow, winner, sequence, reason)


def _result(routed: RoutedTable, commit: SinkCommit, done: Any, writer: str, reason: str | None) -> LoadResult:
    """The result of the direct or Spark's writer (`done`: what it appended)."""
    return LoadResult("committed", commit.sink_id, commit.batch, rows=done.rows, bytes=done.bytes,
                      table_version=done.sequence, start=dict(commit.start_offsets),
                      offsets=dict(done.commit.offsets), run_id=commit.run_id, table=routed.table,
                      topic=routed.topic, writer=writer, writer_reason=reason, freshness=done.freshness)


def _appended(routed: RoutedTable, commit: SinkCommit, arrow: Any, winner: SinkCommit, sequence: int | None,
              reason: str | None) -> LoadResult:
    """The result of pyiceberg's append of `arrow` for `commit`'s batch (`winner`: what the table holds)."""
    return LoadResult("committed", commit.sink_id, commit.batch, rows=arrow.num_rows, table_version=sequence,
                      start=dict(commit.start_offsets), offsets=dict(winner.offsets), run_id=commit.run_id,
                      table=routed.table, topic=routed.topic, writer=PYICEBERG, writer_reason=reason,
                      freshness=arrow_freshness(arrow), dead_letters=winner.dead_letters)

"""The Iceberg direct writer's driver side: the read's tasks write the batch's data files, one snapshot adds them.

No record reaches the driver or the JVM: the tasks of the batch's `pykafka` read write their ranges as the
table's Parquet files (data_files.py) and return a row per file; the driver builds pyiceberg `DataFile`s from
those rows (the statistics from each file's footer) and commits them, with the batch's record in the summary, in
one fast-append snapshot through the commit loop pyiceberg's writer uses too (`batch_append.commit_batch`: no
pyiceberg retries; a lost race re-reads the table and decides).

It writes the records as the Kafka source gives them (Spark's Kafka columns). Rows made in Spark SQL (a
`transform`, a split route), values parsed by `value_schema` or decoded by a registry format are pyiceberg's
writer's (`direct_reason`), as are tables whose files are not Parquet.

Before the files: the table is created from the rows' schema when missing (`create_table`, sorted by `sort_by`);
a batch the table already holds is recognised before anything is written; with `merge_schema` new columns are
added to the table's schema first, in a commit of its own (the files need their field ids), and without it they
are refused (evolution.py). Each task writes its files' rows in the table's sort order (data_files.py). A crash
after the files leaves files no snapshot references (orphans), as with pyiceberg's writer; a run that finds the
batch committed by another deletes its files.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.iceberg.batch_append import commit_batch, held, open_table
from kafka_spark.iceberg.data_files import FILE_ROWS_DDL, DataFileSpec, data_files, file_spec
from kafka_spark.iceberg.evolution import evolved
from kafka_spark.iceberg.position import IcebergLocation, summary_properties
from kafka_spark.records import kafka_schema
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import BatchAlreadyCommittedError
from kafka_spark.sink.freshness import Freshness, files_freshness
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.read_plan import read_plan

if TYPE_CHECKING:
    from pyiceberg.table import Table, Transaction

    from kafka_spark.sink.options import LoadOptions
    from kafka_spark.sink.plan import BatchPlan

log = logging.getLogger(__name__)

WRITER = "kafka_spark.iceberg.data_files:write_range"


class PyicebergWriterNeeded(Exception):
    """A table the direct writer leaves to pyiceberg's writer (`reason`); nothing was written."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Appended:
    """What a direct append committed: the commit the table holds for the batch, its snapshot's sequence
    number, the rows and bytes of the files and how fresh their records were."""

    commit: SinkCommit
    sequence: int | None
    rows: int = 0
    bytes: int = 0
    freshness: Freshness | None = None


def direct_reason(options: LoadOptions, split: bool = False) -> str | None:
    """Why the direct writer cannot write the rows `options` make (`split`: a split route selects them), or
    None."""
    if options.format.transform is not None:
        return "a transform makes the rows in Spark SQL"
    if split:
        return "a split table's rows are selected in Spark SQL"
    if options.parsing.value_schema is not None:
        return "value_schema is parsed by Spark's from_json"
    if options.parsing.decoded or options.decoding:
        return "a registry format decodes the values in Spark's read"
    return None


def table_reason(table: Table) -> str | None:
    """Why the direct writer cannot write `table`'s files, or None."""
    kind = str(table.metadata.properties.get("write.format.default", "parquet")).lower()
    if kind != "parquet":
        return f"the table's files are {kind} (write.format.default); the direct writer writes Parquet"
    return None


def direct_options(spec: DataFileSpec) -> dict[str, str]:
    """The internal `pykafka` options that make a read write `spec`'s files (the FileIO's properties apart)."""
    options = {"directWriteTo": json.dumps({"writer": WRITER, "rows": FILE_ROWS_DDL,
                                            "spec": json.loads(spec.to_json()), "views": False})}
    if spec.io_properties:
        options["directWriteSecret"] = json.dumps(dict(spec.io_properties))
    return options


def append_direct(spark: Any, location: IcebergLocation, options: LoadOptions, plan: BatchPlan,
                  commit: SinkCommit) -> Appended:
    """Write the plan's records as the table's data files in the read's tasks and commit them with `commit` in
    one snapshot, exactly once. PyicebergWriterNeeded when the table needs pyiceberg's writer."""
    schema = kafka_schema(options.source.include_headers)
    table = open_table(location, schema, options.format.partition_by, options.format.sort_by)
    done = held(table, location, commit)
    if done is not None:
        return Appended(*done)
    reason = table_reason(table)
    if reason is not None:
        raise PyicebergWriterNeeded(reason)
    table = evolved(table, schema, options.format.merge_schema, str(location))
    spec = file_spec(table, schema)
    crash_point("before-write")
    rows: list[dict[str, Any]] = []
    if plan.reading:
        rows = [r.asDict() for r in read_plan(spark, options.source, plan, direct_options(spec)).collect()]
    counted = dataclasses.replace(commit, records=sum(r["records"] for r in rows))
    try:
        winner, sequence = commit_files(location, rows, spec, counted)
    except BatchAlreadyCommittedError:
        _delete(table, rows)  # another run's commit holds the batch: no snapshot will reference these
        raise
    return Appended(winner, sequence, counted.records or 0, sum(r["size"] for r in rows), files_freshness(rows))


def commit_files(location: IcebergLocation, rows: list[dict[str, Any]], spec: DataFileSpec, commit: SinkCommit
                 ) -> tuple[SinkCommit, int | None]:
    """Add the files the tasks wrote (`rows`: their file rows) with `commit` in one fast-append snapshot, exactly
    once (`commit_batch`)."""
    files = data_files(rows, spec)

    def stage(txn: Transaction) -> None:
        with txn.update_snapshot(snapshot_properties=summary_properties(commit)).fast_append() as append:
            for file in files:
                append.append_data_file(file)

    return commit_batch(location, commit, location.load, stage)


def _delete(table: Table, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        try:
            table.io.delete(row["path"])
        except OSError as exc:  # an orphan left behind: Iceberg's orphan-file removal finds it
            log.info("%s: could not delete %s: %s", table.name(), row["path"], exc)

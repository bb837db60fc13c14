"""Iceberg dead-letter tables: the records whose values do not parse or decode, beside the table they were read
for (the design every table format shares: sink/dead_letters.py).

The dead-letter table is an Iceberg table of the sink's catalog (`namespace.table`), created by its first dead
letters with the columns DEAD_LETTER_COLUMNS. A batch's dead letters are one snapshot, whose summary holds the
main commit's record under `kafka-spark.dead-letters.<sink id>`: another key than the main tables' positions,
so the dead-letter table never passes for a table the sink has loaded. The sink's last batch there is the record
of the newest snapshot of the current ancestry that has one (the rows' `sink` and `batch` columns when no snapshot
names the sink, as after expiry).

Before each append the summaries are read: a batch the table holds is not appended again. The append runs on a
view of the table that pyiceberg does not retry (batch_append.py), so a commit another writer beat (a second
repair of the same batch) is decided by reading the summaries again, never by appending on top of it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.batch_append import ATTEMPTS, no_retries, open_table, wait_to_retry
from kafka_spark.iceberg.batch_rows import in_utc
from kafka_spark.iceberg.catalog import IcebergCatalog
from kafka_spark.iceberg.evolution import evolve
from kafka_spark.iceberg.position import IcebergLocation, ancestry
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.dead_letters import DeadLetterValues, repair_needed, write_again
from kafka_spark.sink.errors import ConcurrentWriterError
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.value_schema import require_schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame

    from kafka_spark.sink.options import LoadOptions, ValueParsing

log = logging.getLogger(__name__)

DEAD_LETTERS_PREFIX = "kafka-spark.dead-letters."


def check_options(catalog: IcebergCatalog, options: LoadOptions) -> None:
    """Refuse a dead-letter table without a value schema or format, named by a path, or that is the table."""
    parsing = options.parsing
    require_schema(parsing.dead_letter, parsing.value_schema, parsing.decoded)
    if parsing.dead_letter is None:
        return
    where = dead_letter_location(catalog, parsing)
    if where.identifier == catalog.identifier(options.target.table):
        raise ConfigError(f"dead_letter {parsing.dead_letter!r} is the table itself; give another table")


def dead_letter_location(catalog: IcebergCatalog, parsing: ValueParsing) -> IcebergLocation:
    """The dead-letter table in `catalog`; ConfigError for a path."""
    assert parsing.dead_letter is not None
    try:
        return IcebergLocation(catalog, catalog.identifier(parsing.dead_letter))
    except ConfigError:
        raise ConfigError(f"dead_letter {parsing.dead_letter!r}: the Iceberg sink's dead-letter table is a table of "
                          "its catalog, named namespace.table (a path names none)") from None


class IcebergDeadLetters(DeadLetterValues):
    """A batch's checked records whose bad ones go to an Iceberg dead-letter table of `catalog`."""

    advice = "Set dead_letter (--dead-letter) to an Iceberg table to write such records there and load the rest."

    def __init__(self, catalog: IcebergCatalog, parsing: ValueParsing, sink_id: str, df: DataFrame) -> None:
        super().__init__(parsing, sink_id, df)
        self.catalog = catalog

    def write(self, commit: SinkCommit) -> None:
        """Append the bad records of `commit`'s batch, as one snapshot tagged with it, unless the table holds
        that batch already."""
        from pyspark.sql import functions as F

        rows = self.letters().select(F.lit(commit.sink_id).alias("sink"),
                                     F.lit(commit.batch).cast("long").alias("batch"), "*")
        append_letters(dead_letter_location(self.catalog, self.parsing), in_utc(rows.toArrow()), commit)


def written_batch(table: Table, sink_id: str) -> int | None:
    """The sink's last batch whose dead letters `table` holds, None for none."""
    snapshots, whole = ancestry(table)
    key = DEAD_LETTERS_PREFIX + sink_id
    for snapshot in snapshots:
        text = (snapshot.summary.additional_properties if snapshot.summary is not None else {}).get(key)
        if text is not None:
            return SinkCommit.from_json(text, f"{'.'.join(table.name())} snapshot {snapshot.snapshot_id}").batch
    if whole:
        return None  # no snapshot ever named the sink
    # Expiry took the snapshots that named the sink: the rows say which batches they came from. A sink id is
    # letters, digits, '.', '_' and '-', so it quotes as it is.
    batches = table.scan(row_filter=f"sink == '{sink_id}'", selected_fields=("batch",)).to_arrow()["batch"]
    return max(batches.to_pylist(), default=None)


def append_letters(location: IcebergLocation, rows: pa.Table, commit: SinkCommit) -> bool:
    """Append `rows` (the dead letters of `commit`'s batch, Arrow) in one snapshot tagged with `commit`, the table
    created or its schema widened as they need; False when the table holds the batch already."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(ATTEMPTS):
        table = open_table(location, rows.schema, ())
        written = written_batch(table, commit.sink_id)
        if written is not None and written >= commit.batch:
            log.info("%s holds the dead letters of batch %d of sink %r already", location, commit.batch,
                     commit.sink_id)
            return False
        try:
            txn = no_retries(table).transaction()
            evolve(txn, rows.schema, True, str(location))  # a `headers` column once the source reads them
            txn.append(rows, snapshot_properties={DEAD_LETTERS_PREFIX + commit.sink_id: commit.to_json()})
            crash_point("before-dead-letters-commit")
            txn.commit_transaction()
        except CommitFailedException as exc:
            wait_to_retry(location, exc, attempt)
            continue
        return True
    raise ConcurrentWriterError(
        f"other writers committed to {location} before each of {ATTEMPTS} attempts to append the dead letters of "
        f"batch {commit.batch} of sink {commit.sink_id!r}; they are written when the sink next starts")


def reconcile(spark: Any, catalog: IcebergCatalog, options: LoadOptions, previous: SinkCommit | None) -> None:
    """Write the dead letters of the sink's last batch when a crash came between its commit and theirs."""
    from pyiceberg.exceptions import NoSuchTableError

    parsing, target = options.parsing, options.target
    if parsing.dead_letter is None:
        return
    location = dead_letter_location(catalog, parsing)
    try:
        written = written_batch(location.load(), target.sink_id)
    except NoSuchTableError:
        written = None
    if repair_needed(target, parsing, previous, written):
        assert previous is not None
        write_again(spark, options.source, target, parsing, previous,
                    lambda df: IcebergDeadLetters(catalog, parsing, target.sink_id, df))

"""The records whose values do not parse or decode (sink/checked_values.py): a typed failure, or a Delta
dead-letter table.

With `dead_letter`, the parsed records are persisted, counted, and written twice: the good ones to the
table, whose commit JSON says how many went to the dead-letter table (`dead_letters`), then the bad ones
to the dead-letter table with the same `txnAppId`/`txnVersion` as the main commit and its JSON as
`userMetadata`. The main commit is the truth about offsets, so it comes first; a crash between the two is
repaired when the sink next starts (`reconcile`): the last batch's offset ranges, which its commit holds,
are read again from Kafka and its bad records written with that batch's `txn` (Delta skips a write whose
`txn` it has already recorded, so two repairs cannot both land). Only the sink's last batch can lack its
dead letters, because every load, stream start and micro-batch with `dead_letter` reconciles before it
commits; a batch committed by a run without `dead_letter` in between hides the one before it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.batch_again import changes_again, records_again
from kafka_spark.delta.txn_append import append_batch_rows, side_table_batch
from kafka_spark.errors import ConfigError
from kafka_spark.sink.checked_values import ERROR, RAW_COLUMNS, CheckedValues
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.table_names import is_table_name
from kafka_spark.sink.value_schema import require_schema, value_struct
from kafka_spark.spark.versions import require_delta_spark

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafka_spark.sink.change_capture import ChangeCapture
    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing

log = logging.getLogger(__name__)

DEAD_LETTER_COLUMNS = ("sink", "batch", "topic", "partition", "offset", "timestamp", "timestampType", "key",
                       "value", "headers", "error")


def check_options(spark: Any, target: SinkTarget, parsing: ValueParsing) -> None:
    """Refuse a dead-letter table without a schema or that is the table itself, and a DDL Spark cannot parse."""
    require_schema(parsing.dead_letter, parsing.value_schema, parsing.decoded, parsing.changes)
    if parsing.dead_letter is not None:
        if parsing.dead_letter.rstrip("/") == target.table.rstrip("/"):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r} is the table itself; give another table")
        if is_table_name(parsing.dead_letter):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r}: give the dead-letter table's path or URI "
                              "(catalog names are taken for the table only)")
        require_delta_spark(f"dead_letter {parsing.dead_letter!r} (written by Spark's Delta writer)", spark)
    if parsing.value_schema is not None:
        value_struct(spark, parsing.value_schema)


class ParsedValues(CheckedValues):
    """A batch's checked records (sink/checked_values.py) and what becomes of the bad ones: with `dead_letter`,
    `counted` records in a commit how many they are and `write` appends them to the dead-letter table; without,
    `explain` turns the write's failure on one into BadRecordError."""

    def __init__(self, parsing: ValueParsing, sink_id: str, df: DataFrame) -> None:
        super().__init__(parsing, df, keep_bad=parsing.dead_letter is not None)
        self.sink_id = sink_id

    @property
    def persisted(self) -> bool:
        return self.keep_bad

    def explain(self, exc: BaseException, batch: int) -> None:
        """Raise BadRecordError naming the lowest bad offset if `exc` is the failure a bad record raised."""
        error = self.first_bad(exc, self.sink_id, batch, "Set dead_letter (--dead-letter) to a Delta table to "
                                                         "write such records there and load the rest.")
        if error is not None:
            raise error from None

    def counted(self, commit: SinkCommit) -> SinkCommit:
        """`commit` with its dead letters counted, and the first offset read of each partition it has no
        start for (a stream's first batch), so a repair can read the batch again."""
        if not self.persisted:
            return commit
        from pyspark.sql import functions as F

        rows = (self.frame.groupBy("topic", "partition")
                .agg(F.min("offset").alias("first"), F.count_if(F.col(ERROR).isNotNull()).alias("bad")).collect())
        start = dict(commit.start_offsets)
        for row in rows:
            start.setdefault(TopicPartition(row["topic"], row["partition"]), row["first"])
        return dataclasses.replace(commit, start_offsets=start, dead_letters=sum(r["bad"] for r in rows))

    def write(self, commit: SinkCommit) -> None:
        """Append the bad records of `commit`'s batch to the dead-letter table, with the batch's `txn`."""
        from pyspark.sql import functions as F

        assert self.parsing.dead_letter is not None
        available = set(self.frame.columns)
        raw = RAW_COLUMNS if self.parsing.decoded else {}
        columns: list[Column | str] = [
            *(F.col(raw[c]).alias(c) if c in raw else F.col(c) for c in DEAD_LETTER_COLUMNS[2:-1] if c in available),
            F.col(ERROR).alias("error"),
        ]
        append_batch_rows(self.frame.where(F.col(ERROR).isNotNull()).select(*columns), commit,
                            self.parsing.dead_letter)


def reconcile(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing,
              previous: SinkCommit | None, capture: ChangeCapture | None = None) -> None:
    """Write the dead letters of the sink's last batch when a crash came between its commit and theirs.

    A dead-letter table that already holds a later batch of the sink belongs to another table's sink of
    the same id: refused, since Delta would skip this table's dead letters as already written.
    """
    if parsing.dead_letter is None:
        return
    written = side_table_batch(spark, parsing.dead_letter, target.sink_id)
    last = previous.batch if previous is not None else -1
    if written is not None and written > last:
        raise SinkError(
            f"the dead-letter table {parsing.dead_letter} holds batch {written} of sink {target.sink_id!r}, but "
            f"{target.table} has committed {'no batch' if previous is None else f'up to batch {last}'}: the "
            "dead-letter table is shared with another table's sink of the same id. Give each its own sink id "
            "or dead-letter table.")
    if previous is None or previous.dead_letters == 0 or (written is not None and written >= previous.batch):
        return
    log.warning("batch %d of sink %r was committed to %s with %d dead letters that are not in %s (a crash "
                "between the two writes): reading the batch again to write them", previous.batch,
                target.sink_id, target.table, previous.dead_letters, parsing.dead_letter)
    if capture is not None:  # a change stream's: the events its MERGE could not apply
        changes = changes_again(spark, source, target, parsing, previous, capture)
        try:
            _same_count(target, parsing, previous, changes.dead_letters)
            append_batch_rows(changes.dead_letter_rows(), previous, parsing.dead_letter)
        finally:
            changes.release()
        return
    values = ParsedValues(parsing, target.sink_id, records_again(spark, source, previous))
    try:
        _same_count(target, parsing, previous, values.counted(previous).dead_letters)
        values.write(previous)
    finally:
        values.close()


def _same_count(target: SinkTarget, parsing: ValueParsing, previous: SinkCommit, found: int) -> None:
    if found != previous.dead_letters:
        raise SinkError(
            f"batch {previous.batch} of sink {target.sink_id!r} committed {previous.dead_letters} dead "
            f"letters, but reading it again finds {found} bad records (value_schema changed, or records "
            f"were deleted); {parsing.dead_letter} lacks that batch's dead letters")

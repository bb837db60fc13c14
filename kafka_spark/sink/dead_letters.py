"""A dead-letter table beside a sink's table, whatever the table format: which records go there, what its rows
hold, and the repair of a batch whose dead letters a crash kept out.

With `dead_letter`, a batch's checked records (checked_values.py) are persisted, counted, and written twice: the
good ones to the table, whose commit says how many went to the dead-letter table (`dead_letters`), then the bad
ones to the dead-letter table, tagged with the sink id and batch of the main commit (each format's own way:
Delta's `txn`, Iceberg's snapshot summary). The main commit is the truth about offsets, so it comes first; a
crash between the two is repaired when the sink next starts: the last batch's offset ranges, which its commit
holds, are read again from Kafka (batch_again.py) and its bad records written as that batch. Only the sink's
last batch can lack its dead letters, since every load, stream start and micro-batch with `dead_letter` repairs
before it commits; a batch committed by a run without `dead_letter` in between hides the one before it.
"""

from __future__ import annotations

import dataclasses
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink.batch_again import records_again
from kafka_spark.sink.checked_values import ERROR, RAW_COLUMNS, CheckedValues
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.position import SinkCommit

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing

log = logging.getLogger(__name__)

# A dead-letter table's columns: the sink and batch that sent the record there, the record as Kafka has it
# (its original bytes; `headers` when the source reads them), and why it is bad.
DEAD_LETTER_COLUMNS = ("sink", "batch", "topic", "partition", "offset", "timestamp", "timestampType", "key",
                       "value", "headers", "error")


class DeadLetterValues(CheckedValues, ABC):
    """A batch's checked records and what becomes of the bad ones: with `dead_letter`, `counted` records in a
    commit how many they are and `write` appends them to the dead-letter table; without, `explain` turns the
    write's failure on one into BadRecordError, its message ending with `advice`."""

    advice = "Set dead_letter (--dead-letter) to write such records to a dead-letter table and load the rest."

    def __init__(self, parsing: ValueParsing, sink_id: str, df: DataFrame) -> None:
        super().__init__(parsing, df, keep_bad=parsing.dead_letter is not None)
        self.sink_id = sink_id

    @property
    def persisted(self) -> bool:
        return self.keep_bad

    def explain(self, exc: BaseException, batch: int) -> None:
        """Raise BadRecordError naming the lowest bad offset if `exc` is the failure a bad record raised."""
        error = self.first_bad(exc, self.sink_id, batch, self.advice)
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

    def letters(self) -> DataFrame:
        """The bad records as the dead-letter table takes them, but for `sink` and `batch`: original bytes and
        the error."""
        from pyspark.sql import functions as F

        available = set(self.frame.columns)
        raw = RAW_COLUMNS if self.parsing.decoded else {}
        columns: list[Column | str] = [
            *(F.col(raw[c]).alias(c) if c in raw else F.col(c) for c in DEAD_LETTER_COLUMNS[2:-1] if c in available),
            F.col(ERROR).alias("error"),
        ]
        return self.frame.where(F.col(ERROR).isNotNull()).select(*columns)

    @abstractmethod
    def write(self, commit: SinkCommit) -> None:
        """Append the bad records of `commit`'s batch to the dead-letter table, tagged with its sink and batch,
        unless the table holds that batch already."""


def repair_needed(target: SinkTarget, parsing: ValueParsing, previous: SinkCommit | None,
                  written: int | None) -> bool:
    """Whether the sink's last batch (`previous`) has dead letters the dead-letter table lacks (`written`: the
    sink's last batch it holds, None for none).

    A dead-letter table that holds a later batch of the sink belongs to another table's sink of the same id:
    refused, since its batches would hide this table's.
    """
    last = previous.batch if previous is not None else -1
    if written is not None and written > last:
        raise SinkError(
            f"the dead-letter table {parsing.dead_letter} holds batch {written} of sink {target.sink_id!r}, but "
            f"{target.table} has committed {'no batch' if previous is None else f'up to batch {last}'}: the "
            "dead-letter table is shared with another table's sink of the same id. Give each its own sink id "
            "or dead-letter table.")
    if previous is None or previous.dead_letters == 0 or (written is not None and written >= previous.batch):
        return False
    log.warning("batch %d of sink %r was committed to %s with %d dead letters that are not in %s (a crash "
                "between the two writes): reading the batch again to write them", previous.batch,
                target.sink_id, target.table, previous.dead_letters, parsing.dead_letter)
    return True


def write_again(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing, previous: SinkCommit,
                values_of: Callable[[DataFrame], DeadLetterValues]) -> None:
    """Read `previous`'s batch again from Kafka and write its dead letters (`values_of`: the format's checked
    records of a frame), refusing when they are not the ones its commit counted."""
    values = values_of(records_again(spark, source, previous))
    try:
        same_count(target, parsing, previous, values.counted(previous).dead_letters)
        values.write(previous)
    finally:
        values.close()


def same_count(target: SinkTarget, parsing: ValueParsing, previous: SinkCommit, found: int) -> None:
    """SinkError when a batch read again has other bad records than its commit counted."""
    if found != previous.dead_letters:
        raise SinkError(
            f"batch {previous.batch} of sink {target.sink_id!r} committed {previous.dead_letters} dead "
            f"letters, but reading it again finds {found} bad records (value_schema changed, or records "
            f"were deleted); {parsing.dead_letter} lacks that batch's dead letters")

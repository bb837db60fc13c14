"""The records whose values do not parse or decode: a typed failure, or a Delta dead-letter table.

With `value_schema` (a Spark DDL schema such as `"id BIGINT, amount DECIMAL(12,2)"`) every record's value
is parsed as JSON with `from_json` in PERMISSIVE mode, and the frame the transform sees (the view `kafka`)
gains the column `data`, the parsed struct. A record is bad when its value is not null and is empty, not
JSON, or JSON that does not fit the schema (an array, "abc" or 1.5 for an INT); as in `from_json`, a
missing field is null and an extra one is ignored. A null value (a tombstone) is never bad.

Each value is parsed once: the struct comes out of a generator (`explode` of a one-element array). A
column computed in a projection would be copied into every filter Spark pushes through it and into each
field `dropFields` rebuilds (measured: six parses a record instead of one).

Without `dead_letter`, a bad record fails the write before anything is committed, in the write's own
pass: the generator raises for it. Spark cannot move a filter of the transform that uses `data` below the
generator, nor drop the generator when `data` is unused (it could change the row count), so no filter
of the transform (nor the IS NOT NULL conditions Spark infers from one) hides a bad record; only a
condition on the Kafka columns alone (`partition = 0`) can drop records before the check sees them, and
those records are not loaded anyway. On failure a small query finds the lowest bad offset to name.

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
from kafka_spark.delta.location import path_location
from kafka_spark.errors import ConfigError
from kafka_spark.sink.errors import BadRecordError, SinkError
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.sink.position import SinkCommit, app_id
from kafka_spark.sink.table_names import is_table_name
from kafka_spark.sink.value_schema import CORRUPT, bad_value_reason, require_schema, value_struct
from kafka_spark.spark.versions import require_delta_spark

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing

log = logging.getLogger(__name__)

# The columns a PERMISSIVE `pykafka` read with keyFormat/valueFormat adds (kafka_spark.formats.columns).
DECODE_ERRORS = ("keyError", "valueError")
RAW_COLUMNS = {"key": "rawKey", "value": "rawValue"}
_PARSED = "_kafka_spark_parsed"
ERROR = "_kafka_spark_error"
# Starts the message of the exception a bad row raises, so the write's failure can be told from others.
MARKER = "kafka-spark bad record"
DEAD_LETTER_COLUMNS = ("sink", "batch", "topic", "partition", "offset", "timestamp", "timestampType", "key",
                       "value", "headers", "error")


def check_options(spark: Any, target: SinkTarget, parsing: ValueParsing) -> None:
    """Refuse a dead-letter table without a schema or that is the table itself, and a DDL Spark cannot parse."""
    require_schema(parsing.dead_letter, parsing.value_schema, parsing.decoded)
    if parsing.dead_letter is not None:
        if parsing.dead_letter.rstrip("/") == target.table.rstrip("/"):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r} is the table itself; give another table")
        if is_table_name(parsing.dead_letter):
            raise ConfigError(f"dead_letter {parsing.dead_letter!r}: give the dead-letter table's path or URI "
                              "(catalog names are taken for the table only)")
        require_delta_spark(f"dead_letter {parsing.dead_letter!r} (written by Spark's Delta writer)", spark)
    if parsing.value_schema is not None:
        value_struct(spark, parsing.value_schema)


class ParsedValues:
    """A batch's records with `data` parsed from their values, and what becomes of those that do not parse.

    `main` is the frame to transform and commit; `counted` records in a commit how many are dead letters;
    `explain` turns the write's failure on a bad record into BadRecordError; `write` appends the dead
    letters; `close` drops what was persisted.
    """

    def __init__(self, parsing: ValueParsing, sink_id: str, df: DataFrame) -> None:
        from pyspark.sql import functions as F

        self.parsing, self.sink_id = parsing, sink_id
        self.persisted = parsing.dead_letter is not None
        if parsing.decoded:
            self._decoded(df)
            return
        from pyspark.sql.types import StringType, StructField, StructType

        assert parsing.value_schema is not None
        fields = value_struct(df.sparkSession, parsing.value_schema).fields
        schema = StructType([*fields, StructField(CORRUPT, StringType())])
        text = F.col("value").cast("string")
        parsed = F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
        reason = bad_value_reason(text, parsing.value_schema)

        def bad(struct: Column) -> Column:
            # Empty and blank values parse to null rather than to a corrupt record.
            return F.col("value").isNotNull() & (struct.isNull() | struct[CORRUPT].isNotNull())

        def with_data(structs: Column, *extra: Column) -> DataFrame:
            exploded = df.select("*", F.explode(structs).alias(_PARSED))
            return exploded.select(*(F.col(c) for c in df.columns),
                                   F.col(_PARSED).dropFields(CORRUPT).alias("data"), *extra)

        self.frame = with_data(F.array(parsed), F.when(bad(F.col(_PARSED)), reason).alias(ERROR))
        if self.persisted:
            # Counted, then read by the main write and the dead-letter write: parsed and read from Kafka once.
            self.frame = self.frame.persist()
            self.main = self.frame.where(F.col(ERROR).isNull()).drop(ERROR)
        else:
            message = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", reason)
            self.main = with_data(F.transform(F.array(parsed),
                                              lambda s: F.when(bad(s), F.raise_error(message)).otherwise(s)))

    def _decoded(self, df: DataFrame) -> None:
        """Keys and values the source decoded (PERMISSIVE): a record is bad when it has a `keyError` or a
        `valueError`; the dead letters keep its original bytes (`rawKey`, `rawValue`)."""
        from pyspark.sql import functions as F

        extras = [c for c in (*DECODE_ERRORS, *RAW_COLUMNS.values()) if c in df.columns]
        self.columns = [c for c in df.columns if c not in extras]
        errors = [F.col(c) for c in DECODE_ERRORS if c in df.columns] or [F.lit(None).cast("string")]
        self.frame = df.select(*self.columns, F.coalesce(*errors).alias(ERROR),
                               *(F.col(c) for c in RAW_COLUMNS.values() if c in df.columns))
        if self.persisted:
            self.frame = self.frame.persist()
            self.main = self.frame.where(F.col(ERROR).isNull()).select(*self.columns)
            return
        # The value passes through a generator that raises for a bad record, as in the JSON case above.
        message = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", F.col(ERROR))
        checked = F.transform(F.array(F.struct(F.col("value").alias("v"), F.col(ERROR).alias("e"))),
                              lambda s: F.when(s["e"].isNotNull(), F.raise_error(message)).otherwise(s))
        exploded = self.frame.select("*", F.explode(checked).alias(_PARSED))
        self.main = exploded.select(*(F.col(_PARSED)["v"].alias(c) if c == "value" else F.col(c)
                                      for c in self.columns))

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

    def explain(self, exc: BaseException, batch: int) -> None:
        """Raise BadRecordError naming the lowest bad offset if `exc` is the failure a bad record raised."""
        if self.persisted or MARKER not in str(exc):
            return
        from pyspark.sql import functions as F

        rows = (self.frame.where(F.col(ERROR).isNotNull()).groupBy("topic", "partition")
                .agg(F.count(F.lit(1)).alias("count"), F.min(F.struct("offset", ERROR)).alias("first")).collect())
        if not rows:
            return
        firsts = sorted((r["first"]["offset"], r["topic"], r["partition"], r["first"][ERROR]) for r in rows)
        offset, topic, partition, reason = firsts[0]
        count = sum(r["count"] for r in rows)
        others = "; ".join(f"{t} [{p}] offset {o}" for o, t, p, _ in firsts[1:6])
        what = "do not decode with their registry schema" if self.parsing.decoded else "do not parse with value_schema"
        raise BadRecordError(
            f"{count} record(s) of batch {batch} of sink {self.sink_id!r} {what}; "
            f"the first is {topic} [{partition}] offset {offset}: {reason}"
            + (f" (first bad offset of the other partitions: {others})" if others else "")
            + ". Nothing was committed. Set dead_letter (--dead-letter) to a Delta table to write such records "
            "there and load the rest.", topic, partition, offset, reason, count) from None

    def write(self, commit: SinkCommit) -> None:
        """Append the bad records of `commit`'s batch to the dead-letter table, with the batch's `txn`."""
        from pyspark.sql import functions as F

        assert self.parsing.dead_letter is not None
        available = set(self.frame.columns)
        raw = RAW_COLUMNS if self.parsing.decoded else {}
        columns: list[Column | str] = [
            F.lit(commit.sink_id).alias("sink"), F.lit(commit.batch).cast("long").alias("batch"),
            *(F.col(raw[c]).alias(c) if c in raw else F.col(c) for c in DEAD_LETTER_COLUMNS[2:-1] if c in available),
            F.col(ERROR).alias("error"),
        ]
        (self.frame.where(F.col(ERROR).isNotNull()).select(*columns)
         .write.format("delta").mode("append")
         .option("txnAppId", app_id(commit.sink_id)).option("txnVersion", commit.batch)
         .option("userMetadata", commit.to_json())
         # `headers` joins the table when include_headers is turned on later.
         .option("mergeSchema", "true")
         .save(self.parsing.dead_letter))

    def close(self) -> None:
        if self.persisted:
            self.frame.unpersist()


def reconcile(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing,
              previous: SinkCommit | None) -> None:
    """Write the dead letters of the sink's last batch when a crash came between its commit and theirs.

    A dead-letter table that already holds a later batch of the sink belongs to another table's sink of
    the same id: refused, since Delta would skip this table's dead letters as already written.
    """
    if parsing.dead_letter is None:
        return
    app = app_id(target.sink_id)
    state = path_location(parsing.dead_letter, spark).state()
    written = state.txn_versions([app]).get(app) if state.refresh() is not None else None
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
    from kafka_spark.sink.read_plan import read_plan

    start = {tp: off for tp, off in previous.start_offsets.items() if previous.offsets.get(tp, off) > off}
    plan = BatchPlan(previous.batch, start=start, end={tp: previous.offsets[tp] for tp in start})
    values = ParsedValues(parsing, target.sink_id, read_plan(spark, source, plan))
    try:
        found = values.counted(previous).dead_letters
        if found != previous.dead_letters:
            raise SinkError(
                f"batch {previous.batch} of sink {target.sink_id!r} committed {previous.dead_letters} dead "
                f"letters, but reading it again finds {found} bad records (value_schema changed, or records "
                f"were deleted); {parsing.dead_letter} lacks that batch's dead letters")
        values.write(previous)
    finally:
        values.close()

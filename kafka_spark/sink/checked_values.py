"""A batch's records with their values checked: parsed with `value_schema`, or decoded by a registry format.

With `value_schema` (a Spark DDL schema such as `"id BIGINT, amount DECIMAL(12,2)"`) every record's value
is parsed as JSON with `from_json` in PERMISSIVE mode, and the frame the transform sees (the view `kafka`)
gains the column `data`, the parsed struct. A record is bad when its value is not null and is empty, not
JSON, or JSON that does not fit the schema (an array, "abc" or 1.5 for an INT); as in `from_json`, a
missing field is null and an extra one is ignored. A null value (a tombstone) is never bad. With a registry
format, a record is bad when its key or value did not decode (`keyError`/`valueError` of a PERMISSIVE read).

`frame` holds every record with why it is bad (`ERROR`, null for a good one). `main` is what the table takes:
with `keep_bad` (a dead-letter table), the good records of a persisted `frame`; without, every record,
through a generator that raises for a bad one, so a bad record fails the write before anything is committed,
in the write's own pass, and `first_bad` then names the lowest bad offset.

Each value is parsed once: the struct comes out of a generator (`explode` of a one-element array). A
column computed in a projection would be copied into every filter Spark pushes through it and into each
field `dropFields` rebuilds (measured: six parses a record instead of one). Spark cannot move a filter of the
transform that uses `data` below the generator, nor drop the generator when `data` is unused (it could change
the row count), so no filter of the transform (nor the IS NOT NULL conditions Spark infers from one) hides a
bad record; only a condition on the Kafka columns alone (`partition = 0`) can drop records before the check
sees them, and those records are not loaded anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_spark.sink.errors import BadRecordError
from kafka_spark.sink.value_schema import CORRUPT, bad_value_reason, value_struct

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafka_spark.sink.options import ValueParsing

# The columns a PERMISSIVE `pykafka` read with keyFormat/valueFormat adds (kafka_spark.formats.columns).
DECODE_ERRORS = ("keyError", "valueError")
RAW_COLUMNS = {"key": "rawKey", "value": "rawValue"}
ERROR = "_kafka_spark_error"
PARSED = "_kafka_spark_parsed"
# Starts the message of the exception a bad row raises, so the write's failure can be told from others.
MARKER = "kafka-spark bad record"


class CheckedValues:
    """A batch's records, checked (see the module docstring)."""

    def __init__(self, parsing: ValueParsing, df: DataFrame, keep_bad: bool) -> None:
        self.parsing, self.keep_bad = parsing, keep_bad
        self.columns = list(df.columns)
        if parsing.decoded:
            self._decoded(df)
        else:
            self._parsed(df)

    def _parsed(self, df: DataFrame) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        ddl = self.parsing.value_schema
        assert ddl is not None
        schema = StructType([*value_struct(df.sparkSession, ddl).fields, StructField(CORRUPT, StringType())])
        text = F.col("value").cast("string")
        parsed = F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
        reason = bad_value_reason(text, ddl)

        def bad(struct: Column) -> Column:
            # Empty and blank values parse to null rather than to a corrupt record; a null value is a tombstone.
            return F.col("value").isNotNull() & (struct.isNull() | struct[CORRUPT].isNotNull())

        def with_data(structs: Column, *extra: Column) -> DataFrame:
            exploded = df.select("*", F.explode(structs).alias(PARSED))
            return exploded.select(*(F.col(c) for c in df.columns), F.col(PARSED).dropFields(CORRUPT).alias("data"),
                                   *extra)

        self.frame = with_data(F.array(parsed), F.when(bad(F.col(PARSED)), reason).alias(ERROR))
        if self.keep_bad:
            # Counted, then read by the main write and the dead-letter write: parsed and read from Kafka once.
            self.frame = self.frame.persist()
            self.main = self.frame.where(F.col(ERROR).isNull()).drop(ERROR)
            return
        failing = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", reason)
        self.main = with_data(F.transform(F.array(parsed),
                                          lambda s: F.when(bad(s), F.raise_error(failing)).otherwise(s)))

    def _decoded(self, df: DataFrame) -> None:
        """Keys and values the source decoded (PERMISSIVE): the bad records keep their original bytes (`rawKey`,
        `rawValue`) in `frame`."""
        from pyspark.sql import functions as F

        extras = [c for c in (*DECODE_ERRORS, *RAW_COLUMNS.values()) if c in df.columns]
        self.columns = [c for c in df.columns if c not in extras]
        errors = [F.col(c) for c in DECODE_ERRORS if c in df.columns] or [F.lit(None).cast("string")]
        self.frame = df.select(*self.columns, F.coalesce(*errors).alias(ERROR),
                               *(F.col(c) for c in RAW_COLUMNS.values() if c in df.columns))
        if self.keep_bad:
            self.frame = self.frame.persist()
            self.main = self.frame.where(F.col(ERROR).isNull()).select(*self.columns)
            return
        message = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", F.col(ERROR))
        checked = F.transform(F.array(F.struct(F.col("value").alias("v"), F.col(ERROR).alias("e"))),
                              lambda s: F.when(s["e"].isNotNull(), F.raise_error(message)).otherwise(s))
        exploded = self.frame.select("*", F.explode(checked).alias(PARSED))
        self.main = exploded.select(*(F.col(PARSED)["v"].alias(c) if c == "value" else F.col(c)
                                      for c in self.columns))

    def first_bad(self, exc: BaseException, sink_id: str, batch: int, advice: str) -> BadRecordError | None:
        """BadRecordError naming the lowest bad offset when `exc` is the failure a bad record raised, else None;
        `advice` ends its message (what the user can do)."""
        if self.keep_bad or MARKER not in str(exc):
            return None
        from pyspark.sql import functions as F

        rows = (self.frame.where(F.col(ERROR).isNotNull()).groupBy("topic", "partition")
                .agg(F.count(F.lit(1)).alias("count"), F.min(F.struct("offset", ERROR)).alias("first")).collect())
        if not rows:
            return None
        firsts = sorted((r["first"]["offset"], r["topic"], r["partition"], r["first"][ERROR]) for r in rows)
        offset, topic, partition, reason = firsts[0]
        count = sum(r["count"] for r in rows)
        others = "; ".join(f"{t} [{p}] offset {o}" for o, t, p, _ in firsts[1:6])
        what = "do not decode with their registry schema" if self.parsing.decoded else "do not parse with value_schema"
        return BadRecordError(
            f"{count} record(s) of batch {batch} of sink {sink_id!r} {what}; the first is {topic} [{partition}] "
            f"offset {offset}: {reason}" + (f" (first bad offset of the other partitions: {others})" if others else "")
            + f". Nothing was committed. {advice}", topic, partition, offset, reason, count)

    def close(self) -> None:
        if self.keep_bad:
            self.frame.unpersist()


def table_rows(df: DataFrame, parsing: ValueParsing) -> DataFrame:
    """The columns a table takes of `df`'s records, before a transform: with values parsed, `data` added; decoded,
    the decoding's error and raw columns left out; else `df`. For the schema of a table to create: a record that
    is bad fails a job over them."""
    if parsing.changes or (parsing.value_schema is None and not parsing.decoded):
        return df
    return CheckedValues(parsing, df, keep_bad=False).main

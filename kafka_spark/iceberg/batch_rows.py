"""A batch's rows as the table receives them: values parsed or checked, the transform applied, in Arrow.

With `value_schema`, every value is parsed as JSON (`from_json`, PERMISSIVE) into the column `data`, as the
Delta sink does; with a registry format, the source's decoding already did it and reports a record it could
not decode in `keyError` / `valueError`. This version keeps no dead letters: a bad record fails the batch
before anything is committed, with BadRecordError naming the lowest bad offset. The check raises in the same
pass that produces the rows (a generator that raises for a bad record, so no filter of the transform can move
above it and hide one); only on that failure does a second query find the first bad record to name.

The rows are collected to the driver as Arrow (`DataFrame.toArrow`), where pyiceberg writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.sink.errors import BadRecordError
from kafka_spark.sink.read_plan import apply_transform
from kafka_spark.sink.value_schema import CORRUPT, bad_value_reason, value_struct

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafka_spark.sink.options import LoadOptions

DECODE_ERRORS = ("keyError", "valueError")
RAW_COLUMNS = ("rawKey", "rawValue")
ERROR = "_kafka_spark_error"
_PARSED = "_kafka_spark_parsed"
# Starts the message a bad row raises with, so that the write's failure can be told from others.
MARKER = "kafka-spark bad record"


def batch_rows(options: LoadOptions, df: DataFrame, batch: int) -> Any:
    """The batch's rows (`df`: its records) as the table takes them, as a `pyarrow.Table`."""
    parsing = options.parsing
    if parsing.value_schema is None and not parsing.decoded:
        return in_utc(apply_transform(df, options.format.transform).toArrow())
    checked = _checked(df, options)
    try:
        return in_utc(apply_transform(checked.main, options.format.transform).toArrow())
    except Exception as exc:
        if MARKER in str(exc):
            _explain(checked.flagged, options, batch)
        raise


def in_utc(rows: Any) -> Any:
    """`rows` with their timestamp columns labelled UTC: `toArrow` labels them with the session's time zone,
    which Iceberg's `timestamptz` does not take (the instants are the same; only the label changes)."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.timestamp(f.type.unit, "UTC"), f.nullable)
              if pa.types.is_timestamp(f.type) and f.type.tz not in (None, "UTC") else f for f in rows.schema]
    return rows.cast(pa.schema(fields)) if fields != list(rows.schema) else rows


class _Checked:
    def __init__(self, main: DataFrame, flagged: DataFrame) -> None:
        self.main, self.flagged = main, flagged


def _checked(df: DataFrame, options: LoadOptions) -> _Checked:
    """`main`: the records with `data` (parsed values), raising for a bad one; `flagged`: each with why it is
    bad (`ERROR`, null for a good one)."""
    from pyspark.sql import functions as F

    message = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", F.col(ERROR))
    if options.parsing.decoded:
        columns = [c for c in df.columns if c not in (*DECODE_ERRORS, *RAW_COLUMNS)]
        errors = [F.col(c) for c in DECODE_ERRORS if c in df.columns] or [F.lit(None).cast("string")]
        flagged = df.select(*columns, F.coalesce(*errors).alias(ERROR))
        checked = F.transform(F.array(F.struct(F.col("value").alias("v"), F.col(ERROR).alias("e"))),
                              lambda s: F.when(s["e"].isNotNull(), F.raise_error(message)).otherwise(s))
        exploded = flagged.select("*", F.explode(checked).alias(_PARSED))
        main = exploded.select(*(F.col(_PARSED)["v"].alias(c) if c == "value" else F.col(c) for c in columns))
        return _Checked(main, flagged)

    from pyspark.sql.types import StringType, StructField, StructType

    ddl = options.parsing.value_schema
    assert ddl is not None
    schema = StructType([*value_struct(df.sparkSession, ddl).fields, StructField(CORRUPT, StringType())])
    text = F.col("value").cast("string")
    parsed = F.from_json(text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    reason = bad_value_reason(text, ddl)

    def bad(struct: Column) -> Column:
        # Empty and blank values parse to null rather than to a corrupt record; a null value is a tombstone.
        return F.col("value").isNotNull() & (struct.isNull() | struct[CORRUPT].isNotNull())

    def with_data(structs: Column, *extra: Column) -> DataFrame:
        # One parse per record: the struct comes out of a generator, which Spark neither copies into the
        # filters it pushes down nor drops when `data` is unused.
        exploded = df.select("*", F.explode(structs).alias(_PARSED))
        return exploded.select(*(F.col(c) for c in df.columns), F.col(_PARSED).dropFields(CORRUPT).alias("data"),
                               *extra)

    flagged = with_data(F.array(parsed), F.when(bad(F.col(_PARSED)), reason).alias(ERROR))
    failing = F.format_string(f"{MARKER}: %s [%d] offset %d: %s", "topic", "partition", "offset", reason)
    main = with_data(F.transform(F.array(parsed), lambda s: F.when(bad(s), F.raise_error(failing)).otherwise(s)))
    return _Checked(main, flagged)


def _explain(flagged: DataFrame, options: LoadOptions, batch: int) -> None:
    """Raise BadRecordError naming the lowest bad offset of the batch."""
    from pyspark.sql import functions as F

    rows = (flagged.where(F.col(ERROR).isNotNull()).groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("count"), F.min(F.struct("offset", ERROR)).alias("first")).collect())
    if not rows:
        return
    firsts = sorted((r["first"]["offset"], r["topic"], r["partition"], r["first"][ERROR]) for r in rows)
    offset, topic, partition, reason = firsts[0]
    count = sum(r["count"] for r in rows)
    others = "; ".join(f"{t} [{p}] offset {o}" for o, t, p, _ in firsts[1:6])
    what = "do not decode with their registry schema" if options.parsing.decoded else "do not parse with value_schema"
    raise BadRecordError(
        f"{count} record(s) of batch {batch} of sink {options.sink_id!r} {what}; the first is {topic} [{partition}] "
        f"offset {offset}: {reason}" + (f" (first bad offset of the other partitions: {others})" if others else "")
        + ". Nothing was committed (the Iceberg sink keeps no dead letters in this version).",
        topic, partition, offset, reason, count) from None

"""A batch's rows as the table receives them: values parsed or checked, the transform applied.

Values are checked as every table format's are (sink/checked_values.py). Without a dead-letter table, a bad
record fails the batch before anything is committed, with BadRecordError naming the lowest bad offset; with one,
the good rows are the checked records' (`checked_rows`) and the bad ones go there (dead_letter.py).
pyiceberg's writer collects the rows to the driver as Arrow (`DataFrame.toArrow`, `batch_rows`); the direct
writer's tasks write them where they are (`batch_frame`, direct_append.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kafka_spark.sink.checked_values import CheckedValues
from kafka_spark.sink.read_plan import apply_transform

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_spark.sink.options import LoadOptions

NO_DEAD_LETTERS = "Set dead_letter (--dead-letter) to an Iceberg table to write such records there and load the rest."


def batch_frame(options: LoadOptions, df: DataFrame) -> tuple[DataFrame, CheckedValues | None]:
    """The batch's rows (`df`: its records) as the table takes them, and the check of their values (None when
    values are kept as bytes): a Spark job over the rows fails on a bad value."""
    parsing = options.parsing
    if parsing.value_schema is None and not parsing.decoded:
        return apply_transform(df, options.format.transform), None
    checked = CheckedValues(parsing, df, keep_bad=False)
    return apply_transform(checked.main, options.format.transform), checked


@contextmanager
def refusing_bad(checked: CheckedValues | None, options: LoadOptions, batch: int) -> Iterator[None]:
    """Run a job over the checked rows: the failure a bad value raises becomes BadRecordError naming it."""
    try:
        yield
    except Exception as exc:
        error = checked.first_bad(exc, options.sink_id, batch, NO_DEAD_LETTERS) if checked is not None else None
        if error is not None:
            raise error from None
        raise


def batch_rows(options: LoadOptions, df: DataFrame, batch: int) -> Any:
    """The batch's rows (`df`: its records) as the table takes them, as a `pyarrow.Table`."""
    frame, checked = batch_frame(options, df)
    with refusing_bad(checked, options, batch):
        return in_utc(frame.toArrow())


def checked_rows(options: LoadOptions, checked: CheckedValues) -> Any:
    """The good rows of `checked` (a batch's records kept with their bad ones) as the table takes them, as a
    `pyarrow.Table`."""
    return in_utc(apply_transform(checked.main, options.format.transform).toArrow())


def in_utc(rows: Any) -> Any:
    """`rows` with their timestamp columns labelled UTC: `toArrow` labels them with the session's time zone,
    which Iceberg's `timestamptz` does not take (the instants are the same; only the label changes)."""
    import pyarrow as pa

    fields = [pa.field(f.name, pa.timestamp(f.type.unit, "UTC"), f.nullable)
              if pa.types.is_timestamp(f.type) and f.type.tz not in (None, "UTC") else f for f in rows.schema]
    return rows.cast(pa.schema(fields)) if fields != list(rows.schema) else rows

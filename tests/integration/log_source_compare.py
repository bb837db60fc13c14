"""`format("pykafka-log")` on log files beside `format("pykafka")` and Spark's `format("kafka")` on the broker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FORMATS = ("pykafka-log", "pykafka", "kafka")


def load(spark: Any, fmt: str, path: str | None, bootstrap: str, options: Mapping[str, str]) -> Any:
    """A DataFrame of `fmt`; pykafka-log gets `path` and, like the others, `kafka.bootstrap.servers` (ignored)."""
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    if fmt == "pykafka-log":
        reader = reader.option("path", path)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def rows(df: Any) -> list[Any]:
    """All rows, in (topic, partition, offset) order."""
    return sorted(df.collect(), key=lambda r: (r["topic"], r["partition"], r["offset"]))


def assert_same_rows(spark: Any, path: str, bootstrap: str, formats: tuple[str, ...] = FORMATS,
                     **options: str) -> list[Any]:
    """The rows of pykafka-log on `path` equal those of the broker formats with the same options; returns them."""
    frames = {fmt: load(spark, fmt, path, bootstrap, options) for fmt in formats}
    schemas = {fmt: df.schema for fmt, df in frames.items()}
    assert len(set(map(str, schemas.values()))) == 1, schemas
    got = {fmt: rows(df) for fmt, df in frames.items()}
    first = got[formats[0]]
    for fmt in formats[1:]:
        assert len(first) == len(got[fmt]), (fmt, len(first), len(got[fmt]))
        for a, b in zip(first, got[fmt], strict=True):
            assert a == b, (fmt, a, b)
    return first

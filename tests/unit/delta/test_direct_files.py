"""The direct writer's files: Parquet with the table's schema, Delta's statistics, bad records refused."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import Schema

from kafka_spark.delta.direct import nullable_schema
from kafka_spark.delta.direct_files import (
    FILE_ROWS_SCHEMA,
    FileSpec,
    Stats,
    leaf_columns,
    stats_columns,
    write_files,
)
from kafka_spark.records import kafka_schema

UTC = dt.timezone.utc
KAFKA_JSON = nullable_schema(Schema.from_arrow(kafka_schema()).to_json())


def kafka_batch(offsets: range, topic: str = "t", value: bytes | None = b"v") -> pa.RecordBatch:
    n = len(offsets)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([None] * n, pa.binary()), "value": pa.array([value] * n, pa.binary()),
        "topic": [topic] * n, "partition": pa.array([3] * n, pa.int32()), "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)] * n, pa.timestamp("us", "UTC")),
        "timestampType": pa.array([0] * n, pa.int32()),
    }, schema=kafka_schema())


def spec(root: Path, **kw) -> FileSpec:
    return FileSpec(str(root), KAFKA_JSON, stats_columns(KAFKA_JSON, {}), **kw)


def test_files_hold_the_rows_and_statistics_as_delta_writes_them(tmp_path):
    out = list(write_files([kafka_batch(range(10, 20)), kafka_batch(range(20, 25))], spec(tmp_path)))
    rows = pa.Table.from_batches(out, FILE_ROWS_SCHEMA).to_pylist()
    assert len(rows) == 1 and rows[0]["records"] == 15 and rows[0]["badRecords"] is None
    path = tmp_path / rows[0]["path"]
    assert path.stat().st_size == rows[0]["size"] and rows[0]["path"].endswith(".snappy.parquet")
    table = pq.read_table(path)
    assert table.column("offset").to_pylist() == list(range(10, 25))
    assert table.schema.field("timestamp").type == pa.timestamp("us", "UTC")
    stats = json.loads(rows[0]["stats"])
    assert stats == {
        "numRecords": 15,
        # binary columns get no bounds; the timestamp's maximum rounds up to the millisecond
        "minValues": {"topic": "t", "partition": 3, "offset": 10, "timestamp": "2026-01-02T03:04:05.123Z",
                      "timestampType": 0},
        "maxValues": {"topic": "t", "partition": 3, "offset": 24, "timestamp": "2026-01-02T03:04:05.124Z",
                      "timestampType": 0},
        "nullCount": {"key": 15, "value": 0, "topic": 0, "partition": 0, "offset": 0, "timestamp": 0,
                      "timestampType": 0},
    }


def test_a_long_string_keeps_its_prefix_as_minimum_and_no_maximum_and_dv_tables_get_tight_bounds(tmp_path):
    topic = "x" * 40
    rows = pa.Table.from_batches(list(write_files([kafka_batch(range(3), topic=topic)],
                                                  spec(tmp_path, tight_bounds=True)))).to_pylist()
    stats = json.loads(rows[0]["stats"])
    assert stats["minValues"]["topic"] == "x" * 32 and "topic" not in stats["maxValues"]
    assert stats["tightBounds"] is True


def test_statistics_follow_the_table_settings_and_nested_fields():
    nested = Schema.from_arrow(pa.schema([
        pa.field("a", pa.int64()), pa.field("s", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.string())])),
        pa.field("l", pa.list_(pa.int32())), pa.field("b", pa.bool_())])).to_json()
    assert [p for p, _ in leaf_columns(nested)] == [("a",), ("s", "x"), ("s", "y"), ("l",), ("b",)]
    assert stats_columns(nested, {"delta.dataSkippingNumIndexedCols": "2"}) == (("a",), ("s", "x"))
    assert stats_columns(nested, {"delta.dataSkippingStatsColumns": "s, b"}) == (("s", "x"), ("s", "y"), ("b",))
    stats = Stats(nested, stats_columns(nested, {}), tight_bounds=False)
    stats.add(pa.RecordBatch.from_pydict({
        "a": pa.array([1, None, 3], pa.int64()),
        "s": pa.array([{"x": 1.5, "y": "b"}, None, {"x": float("nan"), "y": "a"}],
                      pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.string())])),
        "l": pa.array([[1], None, []], pa.list_(pa.int32())), "b": pa.array([True, False, None])}))
    out = json.loads(stats.to_json())
    # a field of a null struct is null; a NaN leaves the float unbounded; lists and booleans get null counts
    assert out == {"numRecords": 3, "minValues": {"a": 1, "s": {"y": "a"}}, "maxValues": {"a": 3, "s": {"y": "b"}},
                   "nullCount": {"a": 1, "s": {"x": 1, "y": 1}, "l": 1, "b": 1}}


def test_a_record_that_does_not_decode_removes_the_files_and_is_reported(tmp_path):
    good = kafka_batch(range(5))
    bad = kafka_batch(range(5, 8))
    bad = bad.append_column("valueError", pa.array([None, "unknown schema id 9", None], pa.string()))
    good = good.append_column("valueError", pa.nulls(5, pa.string()))
    out = pa.Table.from_batches(list(write_files([good, bad, bad], spec(tmp_path, target_file_bytes=1)))).to_pylist()
    assert len(out) == 1 and out[0]["badRecords"] == 2 and out[0]["path"] is None
    assert json.loads(out[0]["firstBad"]) == {"topic": "t", "partition": 3, "offset": 6,
                                              "reason": "unknown schema id 9"}
    assert not list(tmp_path.glob("*.parquet"))


def test_nullable_schema_makes_every_level_nullable():
    schema = pa.schema([pa.field("v", pa.struct([pa.field("x", pa.int64(), nullable=False)]), nullable=False),
                        pa.field("m", pa.map_(pa.string(), pa.int64()))])
    text = nullable_schema(Schema.from_arrow(schema).to_json())
    assert '"nullable":false' not in text and '"valueContainsNull":false' not in text

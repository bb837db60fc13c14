"""The direct writer's files: Parquet with the table's schema, Delta's statistics, partition directories and
values as Spark's writer makes them, bad records refused."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import Schema

from kafka_spark.delta.writer_choice import nullable_schema
from kafka_spark.records import kafka_schema
from kafka_spark.sink.parquet.files import FILE_ROWS_SCHEMA, FileSpec, write_files
from kafka_spark.sink.parquet.partition_values import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    partition_path,
    partition_value,
    time_zone,
)
from kafka_spark.sink.parquet.stats import Stats, leaf_columns, stats_columns

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


def test_a_long_string_keeps_its_prefix_as_minimum_and_a_raised_prefix_as_maximum_and_dv_tables_get_tight_bounds(
        tmp_path):
    topic = "x" * 40
    rows = pa.Table.from_batches(list(write_files([kafka_batch(range(3), topic=topic)],
                                                  spec(tmp_path, tight_bounds=True)))).to_pylist()
    stats = json.loads(rows[0]["stats"])
    assert stats["minValues"]["topic"] == "x" * 32 and stats["maxValues"]["topic"] == "x" * 32 + "\x7f"
    assert stats["tightBounds"] is True


@pytest.mark.parametrize(("text", "low", "high"), [
    ("abcdef", "abcdef", "abcdef"),  # no longer than the prefix
    ("abcdefgh", "abcdef", "abcdef\x7f"),  # the next character is ASCII
    ("abcdefé", "abcdef", "abcdef\U0010ffff"),  # it is not
    ("abcde\U0001f600x", "abcde\U0001f600", "abcde\U0001f600\x7f"),  # a surrogate pair is not split
    ("abcdef\U0010ffff\U0010ffffz", "abcdef", "abcdef\U0010ffff\U0010ffff\x7f"),  # past the largest character
    ("abcdef" + "\U0010ffff" * 3 + "z", "abcdef", "abcdef" + "\U0010ffff" * 3 + "\x7f"),  # to twice its length
    ("abcdef" + "\U0010ffff" * 4 + "z", "abcdef", None),  # and no further
])
def test_long_strings_are_bounded_as_delta_on_spark_bounds_them(text, low, high):
    # Delta's StatisticsCollection.truncateMinStringAgg / truncateMaxStringAgg, with a prefix of 6 UTF-16 units
    from kafka_spark.sink.parquet.stats import truncated_max, truncated_min

    assert truncated_min(text, 6) == low and truncated_max(text, 6) == high


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


# Partitioned tables: the directory and `partitionValues` texts below are what Delta on Spark 4.4 (session time
# zone UTC unless named) wrote for the same values.
def test_partition_directories_escape_as_spark_does():
    assert escape_path_name("a/b:c%d=e f") == "a%2Fb%3Ac%25d%3De f"
    assert escape_path_name("é\x01{[]}^?*\"'#\\|<>") == "é%01%7B%5B%5D}%5E%3F%2A%22%27%23%5C|<>"
    assert escape_path_name("\x7f\x00-._~") == "%7F\x00-._~"  # NUL is not in Spark's list
    assert escape_path_name("plain.topic-1") == "plain.topic-1"
    assert partition_path([("to/pic", "a=b"), ("n", None)]) == f"to%2Fpic=a%3Db/n={DEFAULT_PARTITION_NAME}/"


@pytest.mark.parametrize(("kind", "value", "expected"), [
    ("string", "a/b:c%d=e f", ("a/b:c%d=e f", "a/b:c%d=e f")),
    ("string", "", (None, None)),  # Spark's writer makes an empty partition value null
    ("string", None, (None, None)),
    ("integer", -3, ("-3", "-3")),
    ("long", 10**12, ("1000000000000", "1000000000000")),
    ("boolean", False, ("false", "false")),
    ("binary", b"\x01\x02a", ("\x01\x02a", "\x01\x02a")),
    ("binary", b"", (None, None)),
    ("date", dt.date(1, 1, 1), ("0001-01-01", "0001-01-01")),
    ("decimal(10,2)", decimal.Decimal("-0.50"), ("-0.50", "-0.50")),
    ("double", 1.5, ("1.5", "1.5")),
    ("double", -0.0, ("-0.0", "-0.0")),
    ("double", float("nan"), ("NaN", "NaN")),
    ("float", 1e20, ("1.0E20", "1.0E20")),
    ("float", 0.1, ("0.1", "0.1")),
    ("float", float("inf"), ("Infinity", "Infinity")),
    ("double", 1e7, ("1.0E7", "1.0E7")),
    ("double", 1234567.25, ("1234567.25", "1234567.25")),
    ("double", 0.001, ("0.001", "0.001")),
    ("double", -1.25e-4, ("-1.25E-4", "-1.25E-4")),
    ("timestamp", dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
     ("2026-01-02 03:04:05.123456", "2026-01-02T03:04:05.123456Z")),
    ("timestamp", dt.datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
     ("2026-01-02 03:04:05.12", "2026-01-02T03:04:05.120000Z")),
    ("timestamp", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), ("2026-01-02 03:04:05", "2026-01-02T03:04:05.000000Z")),
    ("timestamp_ntz", dt.datetime(2026, 1, 2, 3, 4, 5, 100000), ("2026-01-02 03:04:05.1", "2026-01-02 03:04:05.1")),
])
def test_partition_values_are_serialised_as_delta_on_spark_records_them(kind, value, expected):
    assert partition_value(kind, value) == expected


def test_a_timestamp_directory_is_named_in_the_session_time_zone_and_recorded_in_utc():
    value = dt.datetime(2026, 1, 2, 23, 30, tzinfo=UTC)
    assert partition_value("timestamp", value, time_zone("Asia/Tokyo")) == ("2026-01-03 08:30:00",
                                                                           "2026-01-02T23:30:00.000000Z")
    assert partition_value("timestamp", value, time_zone("-05:30"))[0] == "2026-01-02 18:00:00"
    assert time_zone("GMT+8") == dt.timezone(dt.timedelta(hours=8)) and time_zone("UTC") == UTC
    assert time_zone("Nowhere/Such") is None


def partitioned_spec(root: Path, columns: list[str], **kw) -> FileSpec:
    return FileSpec(str(root), KAFKA_JSON, stats_columns(KAFKA_JSON, kw.pop("config", {}), columns),
                    partition_columns=tuple(columns), **kw)


def file_rows(batches, spec_: FileSpec) -> list[dict]:
    return pa.Table.from_batches(list(write_files(batches, spec_)), FILE_ROWS_SCHEMA).to_pylist()


def test_rows_go_to_their_partitions_directory_without_the_partition_columns(tmp_path):
    topics = ["a/b", "", "a/b", None, "x"]
    batch = kafka_batch(range(5)).set_column(2, "topic", pa.array(topics, pa.string()))
    rows = file_rows([batch], partitioned_spec(tmp_path, ["topic"]))
    by_directory = {r["path"].rsplit("/", 1)[0]: r for r in rows}
    # the empty topic and the null one share the null's directory, as with Spark's writer
    assert set(by_directory) == {"topic=a%2Fb", f"topic={DEFAULT_PARTITION_NAME}", "topic=x"}
    assert {d: json.loads(r["partitionValues"]) for d, r in by_directory.items()} == {
        "topic=a%2Fb": {"topic": "a/b"}, f"topic={DEFAULT_PARTITION_NAME}": {"topic": None}, "topic=x": {"topic": "x"}}
    for directory, offsets in [("topic=a%2Fb", [0, 2]), (f"topic={DEFAULT_PARTITION_NAME}", [1, 3]),
                               ("topic=x", [4])]:
        row = by_directory[directory]
        table = pq.read_table(tmp_path / row["path"])
        assert "topic" not in table.schema.names and table.column("offset").to_pylist() == offsets
        assert row["records"] == len(offsets) and (tmp_path / row["path"]).stat().st_size == row["size"]
        stats = json.loads(row["stats"])
        assert "topic" not in stats["minValues"] and "topic" not in stats["nullCount"]
        assert (stats["minValues"]["offset"], stats["maxValues"]["offset"]) == (offsets[0], offsets[-1])
    assert (tmp_path / "topic=a%2Fb").is_dir()


def test_an_unpartitioned_file_has_empty_partition_values(tmp_path):
    assert [r["partitionValues"] for r in file_rows([kafka_batch(range(3))], spec(tmp_path))] == ["{}"]


def test_statistics_skip_partition_columns_when_counting_indexed_columns():
    columns = ["key", "partition"]
    # key and partition have none; the first four others get statistics
    assert stats_columns(KAFKA_JSON, {"delta.dataSkippingNumIndexedCols": "4"}, columns) == (
        ("value",), ("topic",), ("offset",), ("timestamp",))
    assert ("partition",) not in stats_columns(KAFKA_JSON, {}, columns)
    assert ("partition",) in stats_columns(KAFKA_JSON, {})
    spec = FileSpec("/t", KAFKA_JSON, (), partition_columns=tuple(columns), time_zone="Asia/Tokyo",
                    compression="zstd")
    assert FileSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(("codec", "suffix", "written"), [("snappy", ".snappy", "SNAPPY"), ("zstd", ".zstd", "ZSTD"),
                                                          ("gzip", ".gz", "GZIP"), ("none", "", "UNCOMPRESSED")])
def test_files_are_compressed_and_named_as_sparks_parquet_writer_does(tmp_path, codec, suffix, written):
    rows = file_rows([kafka_batch(range(3))], spec(tmp_path, compression=codec))
    assert rows[0]["path"].endswith(f"-c000{suffix}.parquet")
    metadata = pq.ParquetFile(tmp_path / rows[0]["path"]).metadata
    assert metadata.row_group(0).column(0).compression == written


def test_files_per_partition_value_stay_within_the_target_size_and_open_files_are_bounded(tmp_path, monkeypatch):
    import kafka_spark.sink.parquet.files as files

    monkeypatch.setattr(files, "ROW_GROUP_BYTES", 1)  # a row group per batch
    monkeypatch.setattr(files, "MAX_OPEN_FILES", 2)
    two = partitioned_spec(tmp_path / "multi", ["partition"], target_file_bytes=1)
    batches = [kafka_batch(range(i * 10, i * 10 + 10)).set_column(3, "partition", pa.array([i % 2] * 10, pa.int32()))
               for i in range(4)]
    rows = file_rows(batches, two)
    # the target of one byte closes a file at its first row group: four files of ten rows, two per partition
    assert sorted((r["path"].split("/")[0], r["records"]) for r in rows) == [("partition=0", 10)] * 2 + [
        ("partition=1", 10)] * 2
    # Three partition values taking turns with two files open: the least recently written one closes.
    monkeypatch.setattr(files, "ROW_GROUP_BYTES", 64 << 20)
    three = [kafka_batch(range(i, i + 1)).set_column(3, "partition", pa.array([p], pa.int32()))
             for i, p in enumerate([0, 1, 2, 0])]
    rows = file_rows(three, partitioned_spec(tmp_path / "lru", ["partition"]))
    assert [(r["path"].split("/")[0], r["records"]) for r in rows] == [
        ("partition=0", 1), ("partition=1", 1), ("partition=2", 1), ("partition=0", 1)]
    offsets = sorted(o for r in rows for o in pq.read_table(tmp_path / "lru" / r["path"]).column("offset").to_pylist())
    assert offsets == [0, 1, 2, 3]


def test_a_bad_record_removes_the_files_of_every_partition(tmp_path):
    good = kafka_batch(range(4)).set_column(3, "partition", pa.array([0, 1, 2, 3], pa.int32()))
    good = good.append_column("valueError", pa.nulls(4, pa.string()))
    bad = kafka_batch(range(4, 5)).append_column("valueError", pa.array(["bad"], pa.string()))
    rows = file_rows([good, bad], partitioned_spec(tmp_path, ["partition"]))
    assert len(rows) == 1 and rows[0]["badRecords"] == 1 and rows[0]["partitionValues"] is None
    assert not list(tmp_path.rglob("*.parquet"))


def test_every_partition_column_type_splits_rows(tmp_path):
    schema = Schema.from_arrow(pa.schema([
        pa.field("b", pa.bool_()), pa.field("d", pa.date32()), pa.field("m", pa.decimal128(10, 2)),
        pa.field("f", pa.float64()), pa.field("t", pa.timestamp("us", "UTC")), pa.field("v", pa.int64())])).to_json()
    laid, columns = nullable_schema(schema), ("b", "d", "m", "f", "t")
    batch = pa.RecordBatch.from_pydict({
        "b": [True, True, None], "d": [dt.date(2026, 1, 2)] * 3,
        "m": pa.array([decimal.Decimal("1.20")] * 2 + [None], pa.decimal128(10, 2)), "f": [0.5, 0.5, float("nan")],
        "t": pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)] * 3, pa.timestamp("us", "UTC")),
        "v": [1, 2, 3]})
    rows = file_rows([batch], FileSpec(str(tmp_path), laid, stats_columns(laid, {}, columns),
                                       partition_columns=columns))
    assert sorted((r["path"].rsplit("/", 1)[0], r["records"]) for r in rows) == [
        ("b=__HIVE_DEFAULT_PARTITION__/d=2026-01-02/m=__HIVE_DEFAULT_PARTITION__/f=NaN/t=2026-01-02 03%3A04%3A05", 1),
        ("b=true/d=2026-01-02/m=1.20/f=0.5/t=2026-01-02 03%3A04%3A05", 2)]
    values = sorted((json.loads(r["partitionValues"]) for r in rows), key=lambda v: v["f"])
    assert values[0] == {"b": "true", "d": "2026-01-02", "m": "1.20", "f": "0.5", "t": "2026-01-02T03:04:05.000000Z"}
    assert [json.loads(r["stats"])["minValues"] for r in rows] and all(
        set(json.loads(r["stats"])["nullCount"]) == {"v"} for r in rows)


def test_decimal_bounds_are_json_numbers_with_their_digits(tmp_path):
    schema = nullable_schema(Schema.from_arrow(pa.schema([pa.field("m", pa.decimal128(20, 4))])).to_json())
    values = [decimal.Decimal("1.2000"), decimal.Decimal("-12345678901234.5678"), None]
    batch = pa.RecordBatch.from_pydict({"m": pa.array(values, pa.decimal128(20, 4))})
    rows = file_rows([batch], FileSpec(str(tmp_path), schema, stats_columns(schema, {}, ())))
    stats = json.loads(rows[0]["stats"], parse_float=decimal.Decimal)
    assert stats["minValues"] == {"m": decimal.Decimal("-12345678901234.5678")}
    assert stats["maxValues"] == {"m": decimal.Decimal("1.2000")} and stats["nullCount"] == {"m": 1}
    assert '"maxValues":{"m":1.2000}' in rows[0]["stats"]


def test_views_into_decoded_bytes_are_written_uncopied_with_the_tables_types(tmp_path):
    import kafka_spark.sink.parquet.files as files
    from kafka_spark.records import decode_to_arrow, encode_batch

    batches = []
    for i in range(12):
        buf = encode_batch([(b"k", bytes([i]) * 4000, (), 1_700_000_000_000)] * 1000, base_offset=i * 1000)
        batches.append(decode_to_arrow(buf, "t", 3, start_offset=i * 1000, end_offset=i * 1000 + 20,
                                       views=True).batch)
    assert batches[0].schema.field("value").type == pa.binary_view()
    assert spec(tmp_path).takes_views
    rows = file_rows(batches, spec(tmp_path))
    assert [r["records"] for r in rows] == [240]
    parquet = pq.ParquetFile(tmp_path / rows[0]["path"])
    assert parquet.schema_arrow.field("value").type == pa.binary()  # the table's type, no Arrow schema stored
    table = parquet.read()
    assert table.column("value").to_pylist() == [bytes([i]) * 4000 for i in range(12) for _ in range(20)]
    assert table.column("offset").to_pylist() == [i * 1000 + j for i in range(12) for j in range(20)]
    # Parsed values and partitioned files take the bytes copied (views would pin every buffer a file saw).
    assert not spec(tmp_path, value_schema='{"type":"struct","fields":[]}').takes_views
    assert not partitioned_spec(tmp_path, ["partition"]).takes_views
    rows = file_rows(batches[:2], partitioned_spec(tmp_path / "p", ["partition"]))
    assert pq.read_table(tmp_path / "p" / rows[0]["path"]).column("value").to_pylist()[:1] == [bytes([0]) * 4000]
    assert files.parquet_takes_views()

"""The Arrow output matches Spark's Kafka source schema exactly."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from kafka_spark.records import decode_to_arrow, encode_batch, kafka_schema
from kafka_spark.records.crc import crc32c

SPARK = pa.schema([
    pa.field("key", pa.binary(), nullable=True),
    pa.field("value", pa.binary(), nullable=True),
    pa.field("topic", pa.string(), nullable=True),
    pa.field("partition", pa.int32(), nullable=True),
    pa.field("offset", pa.int64(), nullable=True),
    pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=True),
    pa.field("timestampType", pa.int32(), nullable=True),
])
HEADERS = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))


def test_schema_is_exact() -> None:
    assert kafka_schema().equals(SPARK, check_metadata=True)
    with_headers = kafka_schema(include_headers=True)
    assert with_headers.equals(SPARK.append(pa.field("headers", HEADERS)), check_metadata=True)
    assert with_headers.field("headers").type.value_field.name == "element"
    for field in with_headers:
        assert field.type != pa.large_binary() and field.type != pa.large_string()


def test_batches_carry_the_schema() -> None:
    buf = encode_batch([(None, None, [], 5), (b"k", b"", [("a", None)], 6)])
    for include in (False, True):
        for data in (buf, b"", buf[:30]):
            batch = decode_to_arrow(data, "topic", 1, include_headers=include).batch
            assert batch.schema.equals(kafka_schema(include))
            batch.validate(full=True)


def test_nulls_are_arrow_nulls() -> None:
    buf = encode_batch([(None, None, [], 5), (b"k", b"", [("a", None)], 6), (b"", b"v", [], 7)])
    batch = decode_to_arrow(buf, "topic", 1, include_headers=True).batch
    assert batch.column("key").to_pylist() == [None, b"k", b""]
    assert batch.column("value").to_pylist() == [None, b"", b"v"]
    assert batch.column("key").null_count == 1 and batch.column("value").null_count == 1
    # Spark's source gives a null array, not an empty one, for records without headers.
    assert batch.column("headers").to_pylist() == [None, [{"key": "a", "value": None}], None]


def test_timestamps_are_utc_microseconds() -> None:
    buf = encode_batch([(None, b"x", [], 1_700_000_000_123)])
    batch = decode_to_arrow(buf, "t", 0).batch
    assert batch.column("timestamp").to_pylist() == [dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)]
    assert batch.column("timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_123_000]
    assert batch.column("timestampType").to_pylist() == [0]


def test_magic_v0_has_no_timestamp() -> None:
    # As Spark shows it: the Java consumer's -1 ms and NO_TIMESTAMP_TYPE (-1).
    batch = decode_to_arrow(encode_batch([(None, b"x", [], 5)], magic=0), "t", 0).batch
    assert batch.column("timestamp").cast(pa.int64()).to_pylist() == [-1000]
    assert batch.column("timestampType").to_pylist() == [-1]


def test_invalid_utf8_header_keys_are_replaced() -> None:
    buf = bytearray(encode_batch([(None, b"x", [("ab", b"v")], 5)]))
    at = bytes(buf).index(b"ab")
    buf[at] = 0xFF
    buf[17:21] = crc32c(bytes(buf[21:])).to_bytes(4, "big")
    batch = decode_to_arrow(bytes(buf), "t", 0, include_headers=True).batch
    assert batch.column("headers").to_pylist() == [[{"key": "\ufffdb", "value": b"v"}]]

"""The decimal columns a registry format's decoded change events declare: Debezium's Avro `after` row (a
`numeric(12,3)` as an Avro decimal) and key, or an upsert topic's value; raw bytes (JSON) declare none."""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from kafka_spark.delta.changes import declared_types
from kafka_spark.sink.change_capture import ChangeCapture

ROW = StructType([StructField("sku", StringType(), False), StructField("price", DecimalType(12, 3)),
                  StructField("qty", LongType()), StructField("ratio", DoubleType()),
                  StructField("location", StructType([StructField("lat", DecimalType(9, 6))]))])
SOURCE = StructType([StructField("lsn", LongType()), StructField("ts_ms", LongType())])
ENVELOPE = StructType([StructField("before", ROW), StructField("after", ROW), StructField("source", SOURCE),
                       StructField("op", StringType(), False)])
KEY = StructType([StructField("sku", StringType(), False), StructField("batch", DecimalType(20, 0), False)])


def records(key: StructType | BinaryType, value: StructType | BinaryType) -> StructType:
    return StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                       StructField("offset", LongType()), StructField("key", key), StructField("value", value)])


def test_debezium_avro_rows_and_keys_declare_their_decimals():
    found = declared_types(records(KEY, ENVELOPE), ChangeCapture("debezium"))
    # the top-level columns only: a struct column's type is its values' (a decimal inside it a DOUBLE, as for JSON)
    assert found == {"batch": DecimalType(20, 0), "price": DecimalType(12, 3)}


def test_an_upsert_value_is_the_row():
    assert declared_types(records(BinaryType(), ROW), ChangeCapture("upsert")) == {"price": DecimalType(12, 3)}
    # a Debezium envelope's own fields are not the row's
    assert declared_types(records(BinaryType(), ENVELOPE), ChangeCapture("upsert")) == {}


def test_raw_bytes_and_envelopes_without_an_after_row_declare_nothing():
    assert declared_types(records(BinaryType(), BinaryType()), ChangeCapture("debezium")) == {}
    no_after = StructType([StructField("op", StringType()), StructField("price", DecimalType(5, 2))])
    assert declared_types(records(BinaryType(), no_after), ChangeCapture("debezium")) == {}

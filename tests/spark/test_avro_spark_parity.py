"""The Avro codec against Spark's own `from_avro` (spark-avro): for a schema holding every Avro type and logical
type, the Spark type `from_avro` gives is the Spark form of our Arrow type, and the rows it decodes equal ours.

Payloads are written by fastavro from the original schema (logical types applied by fastavro), without framing.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import re
import uuid
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from kafka_spark.formats.avro.codec import avro_decoder
from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.spark_ddl import arrow_to_spark_ddl

UTC = datetime.timezone.utc
TIME_TYPE = "spark.sql.timeType.enabled"

POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}]}
LABEL = {"type": "record", "name": "Label", "fields": [{"name": "text", "type": "string"}]}
SCHEMA = {
    "type": "record", "name": "Everything", "namespace": "parity", "fields": [
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "nothing", "type": "null"},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "md5", "type": {"type": "fixed", "name": "Md5", "size": 4}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "big", "type": {"type": "fixed", "name": "Big", "size": 12, "logicalType": "decimal",
                                 "precision": 28, "scale": 6}},
        {"name": "not_decimal", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "maybe_ints", "type": {"type": "array", "items": ["null", "int"]}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "notes", "type": {"type": "map", "values": ["null", "string"]}},
        {"name": "where", "type": POINT},
        {"name": "opt_where", "type": ["null", "Point"]},
        {"name": "opt_s", "type": ["null", "string"]},
        {"name": "s_opt", "type": ["string", "null"]},
        {"name": "int_or_long", "type": ["int", "long"]},
        {"name": "opt_float_or_double", "type": ["null", "float", "double"]},
        {"name": "mixed", "type": ["null", "int", "string", LABEL]},
        {"name": "two_records", "type": ["Point", "Label"]},
        {"name": "enum_or_string", "type": ["string", {"type": "enum", "name": "Size", "symbols": ["S", "M"]}]},
        {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": {
            "type": "record", "name": "Cell", "fields": [
                {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
                {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 5,
                                                     "scale": 1}]}]}}}},
    ]}


def _rows() -> list[dict[str, Any]]:
    base = {
        "b": True, "i": -7, "l": 1 << 40, "f": 1.5, "d": -2.25, "s": "héllo", "raw": b"\x00\xff", "nothing": None,
        "color": "GREEN", "md5": b"abcd", "price": decimal.Decimal("-1234567890.12"),
        "big": decimal.Decimal("1234567890123456789012.345678"), "not_decimal": b"\x01\x02",
        "day": datetime.date(2024, 2, 29), "t_ms": datetime.time(13, 14, 15, 16000),
        "t_us": datetime.time(23, 59, 59, 999999),
        "ts_ms": datetime.datetime(2024, 5, 1, 12, 30, 1, 123000, tzinfo=UTC),
        "ts_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "lts_ms": datetime.datetime(2024, 5, 1, 12, 30, 1, 123000),
        "lts_us": datetime.datetime(2001, 2, 3, 4, 5, 6, 7),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "tags": ["a", "b"], "maybe_ints": [1, None, 3], "counts": {"x": 1, "y": -(1 << 50)},
        "notes": {"k": None, "v": "w"}, "where": {"x": 1, "y": 2}, "opt_where": {"x": 3, "y": 4},
        "opt_s": "present", "s_opt": None, "int_or_long": 5, "opt_float_or_double": 0.5,
        "mixed": ("parity.Label", {"text": "lbl"}), "two_records": ("parity.Label", {"text": "second"}),
        "enum_or_string": ("parity.Size", "M"),
        "nested": [{"c": {"at": datetime.datetime(2020, 1, 1, tzinfo=UTC), "amount": decimal.Decimal("12.5")}},
                   {}, {"d": {"at": None, "amount": None}}],
    }
    second = {
        **base, "b": False, "i": 2 ** 31 - 1, "l": -(2 ** 63), "f": -0.0, "d": 1e300, "s": "", "raw": b"",
        "color": "BLUE", "price": decimal.Decimal("0.01"), "big": decimal.Decimal("-0.000001"),
        "day": datetime.date(1900, 1, 1), "tags": [], "maybe_ints": [], "counts": {}, "notes": {},
        "opt_where": None, "opt_s": None, "s_opt": "here", "int_or_long": 1 << 40, "opt_float_or_double": None,
        "mixed": 42, "two_records": ("parity.Point", {"x": 9, "y": 8}), "enum_or_string": "free text",
        "nested": [],
    }
    third = {**base, "mixed": "text", "opt_float_or_double": 1e-300}
    fourth = {**base, "mixed": None}
    return [base, second, third, fourth]


def _payloads() -> list[bytes]:
    # fastavro refuses the invalid decimal that Java Avro ignores; the bytes are the same without it
    fields = [{**f, "type": "bytes"} if f["name"] == "not_decimal" else f for f in SCHEMA["fields"]]
    parsed = fastavro.parse_schema({**SCHEMA, "fields": fields})
    out = []
    for row in _rows():
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, row)
        out.append(buffer.getvalue())
    return out




@pytest.fixture(scope="module")
def spark_avro(spark):
    """The session, with spark-avro's `from_avro` available (its jar is on the local session's class path)."""
    jvm = spark._jvm
    try:
        jvm.java.lang.Class.forName("org.apache.spark.sql.avro.AvroDataToCatalyst", False,
                                    jvm.Thread.currentThread().getContextClassLoader())
    except Exception:  # a py4j error naming ClassNotFoundException
        pytest.fail("org.apache.spark:spark-avro_2.13 is not on the local Spark session's class path "
                    "(kafka_spark/local/poms/spark.xml)")
    # from_avro gives TIME for time-micros even when disabled, but a cast to it needs it enabled
    before = spark.conf.get(TIME_TYPE)
    spark.conf.set(TIME_TYPE, "true")
    yield spark
    spark.conf.set(TIME_TYPE, before)


def _maps_as_dicts(value: Any) -> Any:
    """to_pylist values with maps (lists of (key, value) tuples) as dicts."""
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) for v in value):
            return {k: _maps_as_dicts(v) for k, v in value}
        return [_maps_as_dicts(v) for v in value]
    if isinstance(value, dict):
        return {k: _maps_as_dicts(v) for k, v in value.items()}
    return value


def _nullable_everywhere(json_text: str) -> str:
    return re.sub(r'"(nullable|containsNull|valueContainsNull)":false', r'"\1":true', json_text)


def test_from_avro_types_and_values_match_ours(spark_avro) -> None:
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import col
    from pyspark.sql.types import _parse_datatype_string

    text = json.dumps(SCHEMA)
    schema = RegisteredSchema(text, id=1, subject="parity-value", version=1)
    decoder = avro_decoder(schema, InlineSource(schema))
    payloads = _payloads()
    payloads.append(payloads[0] + b"\x02trailing bytes")  # ignored by both
    ours = pa.array([decoder.decode(1, (), p) for p in payloads], type=decoder.arrow_type)

    df = spark_avro.createDataFrame([(i, p) for i, p in enumerate(payloads)], "n INT, payload BINARY")
    decoded = df.orderBy("n").select(from_avro(col("payload"), text).alias("v"))
    spark_type = decoded.schema["v"].dataType
    declared = _parse_datatype_string(arrow_to_spark_ddl(decoder.arrow_type))
    assert _nullable_everywhere(declared.json()) == _nullable_everywhere(spark_type.json())

    # PySpark's toArrow cannot carry a null struct whose fields are NOT NULL: the same values, nullable throughout
    theirs = decoded.select(col("v").cast(declared).alias("v")).toArrow().column("v").combine_chunks()
    # Spark's maps come in Java hash order, ours in the payload's: compared as dicts
    pairs = zip(_maps_as_dicts(theirs.to_pylist()), _maps_as_dicts(ours.to_pylist()), strict=True)
    mismatches = [(n, name, theirs_row[name], ours_row[name]) for n, (theirs_row, ours_row) in enumerate(pairs)
                  for name in ours_row if theirs_row[name] != ours_row[name]]
    assert mismatches == []


NODE = {"type": "record", "name": "Node", "namespace": "parity", "fields": [
    {"name": "value", "type": "int"},
    {"name": "next", "type": ["null", "Node"]},
    {"name": "kids", "type": {"type": "array", "items": "Node"}},
    {"name": "either", "type": ["null", "int", "string", LABEL, {"type": "array", "items": "long"}]},
]}


def test_from_avro_options_match_ours(spark_avro) -> None:
    """recursiveFieldMaxDepth drops a recursive record's deeper levels; stable union member names."""
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import col
    from pyspark.sql.types import _parse_datatype_string

    leaf = {"value": 3, "next": None, "kids": [], "either": None}
    middle = {"value": 2, "next": leaf, "kids": [leaf, leaf], "either": [7, 8]}
    rows = [{"value": 1, "next": middle, "kids": [middle], "either": ("parity.Label", {"text": "x"})},
            {"value": 4, "next": None, "kids": [], "either": "s"}]
    parsed = fastavro.parse_schema(NODE)
    payloads = []
    for row in rows:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, row)
        payloads.append(buffer.getvalue())
    text = json.dumps(NODE)
    options = {"recursiveFieldMaxDepth": "2", "enableStableIdentifiersForUnionType": "true"}
    schema = RegisteredSchema(text, id=1)
    decoder = avro_decoder(schema, InlineSource(schema), options)
    ours = pa.array([decoder.decode(1, (), p) for p in payloads], type=decoder.arrow_type)

    df = spark_avro.createDataFrame([(i, p) for i, p in enumerate(payloads)], "n INT, payload BINARY")
    decoded = df.orderBy("n").select(from_avro(col("payload"), text, options).alias("v"))
    declared = _parse_datatype_string(arrow_to_spark_ddl(decoder.arrow_type))
    assert _nullable_everywhere(declared.json()) == _nullable_everywhere(decoded.schema["v"].dataType.json())
    theirs = decoded.select(col("v").cast(declared).alias("v")).toArrow().column("v").combine_chunks()
    assert theirs.to_pylist() == ours.to_pylist()

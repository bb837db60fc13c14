"""spark-avro's type mapping: Avro reader schemas to Arrow (Spark 4.2's SchemaConverters.toSqlType), Arrow
column types to Avro (toAvroType), and Arrow types as Spark DDL."""

from __future__ import annotations

import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.formats.avro.codec import avro_decoder, avro_encoder, avro_schema_for
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.spark_ddl import arrow_to_spark_ddl, struct_fields_ddl


class Source:
    """Schemas by id, and referenced schemas by (subject, version)."""

    def __init__(self, by_id: dict[int, RegisteredSchema] | None = None,
                 by_subject: dict[tuple[str, int], RegisteredSchema] | None = None) -> None:
        self.ids = by_id or {}
        self.subjects = by_subject or {}

    def by_id(self, schema_id: int) -> RegisteredSchema:
        return self.ids[schema_id]

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        return self.subjects[(reference.subject, reference.version)]


def arrow_of(schema: Any, options: dict[str, str] | None = None) -> pa.DataType:
    registered = RegisteredSchema(json.dumps(schema), id=1)
    return avro_decoder(registered, Source({1: registered}), options).arrow_type


def field_type(avro: Any) -> pa.DataType:
    """The Arrow type of a record field of Avro type `avro`."""
    return arrow_of({"type": "record", "name": "R", "fields": [{"name": "f", "type": avro}]}).field("f").type


LOGICAL = {"ms": {"type": "long", "logicalType": "timestamp-millis"}}

MAPPINGS: list[tuple[Any, pa.DataType]] = [
    ("null", pa.null()),
    ("boolean", pa.bool_()),
    ("int", pa.int32()),
    ("long", pa.int64()),
    ("float", pa.float32()),
    ("double", pa.float64()),
    ("bytes", pa.binary()),
    ("string", pa.string()),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string()),
    ({"type": "fixed", "name": "F", "size": 3}, pa.binary()),
    ({"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}, pa.decimal128(12, 2)),
    ({"type": "bytes", "logicalType": "decimal", "precision": 7}, pa.decimal128(7, 0)),
    ({"type": "fixed", "name": "D", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 10},
     pa.decimal128(38, 10)),
    # decimals Java Avro rejects (so spark-avro sees plain bytes): scale > precision, too many digits for the fixed
    ({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}, pa.binary()),
    ({"type": "fixed", "name": "T", "size": 2, "logicalType": "decimal", "precision": 5}, pa.binary()),
    ({"type": "bytes", "logicalType": "decimal"}, pa.binary()),
    ({"type": "int", "logicalType": "date"}, pa.date32()),
    ({"type": "int", "logicalType": "time-millis"}, pa.int32()),
    ({"type": "long", "logicalType": "time-micros"}, pa.time64("ns")),
    ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("us", tz="UTC")),
    ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", tz="UTC")),
    ({"type": "long", "logicalType": "local-timestamp-millis"}, pa.timestamp("us")),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
    ({"type": "long", "logicalType": "timestamp-nanos"}, pa.int64()),
    ({"type": "int", "logicalType": "timestamp-millis"}, pa.int32()),
    ({"type": "string", "logicalType": "uuid"}, pa.string()),
    ({"type": "fixed", "name": "U", "size": 16, "logicalType": "uuid"}, pa.binary()),
    ({"type": "long", "spark.sql.catalyst.type": "interval day to second"}, pa.duration("us")),
    ({"type": "long", "spark.sql.catalyst.type": "interval hour to minute"}, pa.duration("us")),
    ({"type": "array", "items": "string"}, pa.list_(pa.string())),
    ({"type": "array", "items": ["null", "int"]}, pa.list_(pa.int32())),
    ({"type": "map", "values": "long"}, pa.map_(pa.string(), pa.int64())),
    ({"type": "map", "values": LOGICAL["ms"]}, pa.map_(pa.string(), pa.timestamp("us", tz="UTC"))),
    (["null", "string"], pa.string()),
    (["string", "null"], pa.string()),
    (["int", "long"], pa.int64()),
    (["long", "int"], pa.int64()),
    (["null", "int", "long"], pa.int64()),
    (["float", "double"], pa.float64()),
    (["double", "null", "float"], pa.float64()),
    (["int", LOGICAL["ms"]], pa.int64()),  # spark-avro compares the underlying types only
    (["string"], pa.string()),
    (["null", "int", "string"], pa.struct([("member0", pa.int32()), ("member1", pa.string())])),
    (["int", "null", "boolean", {"type": "array", "items": "int"}],
     pa.struct([("member0", pa.int32()), ("member1", pa.bool_()), ("member2", pa.list_(pa.int32()))])),
    (["int", "long", "string"], pa.struct([("member0", pa.int32()), ("member1", pa.int64()),
                                           ("member2", pa.string())])),
    (["null"], pa.struct([])),
    ({"type": "record", "name": "In", "fields": [{"name": "z", "type": "int"}, {"name": "a", "type": "string"}]},
     pa.struct([("z", pa.int32()), ("a", pa.string())])),
]


@pytest.mark.parametrize(("avro", "expected"), MAPPINGS, ids=[json.dumps(a)[:60] for a, _ in MAPPINGS])
def test_field_types_follow_spark_avro(avro: Any, expected: pa.DataType) -> None:
    assert field_type(avro) == expected


def test_top_level_non_records_map_to_their_own_type() -> None:
    assert arrow_of("string") == pa.string()
    assert arrow_of(["null", "long"]) == pa.int64()
    assert arrow_of({"type": "array", "items": "int"}) == pa.list_(pa.int32())
    assert arrow_of(["int", "string"]) == pa.struct([("member0", pa.int32()), ("member1", pa.string())])


def _fields(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return [f for field in t for f in [field, *_fields(field.type)]]
    if pa.types.is_list(t):
        return [t.value_field, *_fields(t.value_type)]
    if pa.types.is_map(t):
        return [t.item_field, *_fields(t.item_type)]
    return []


def test_every_field_is_nullable_and_the_order_is_the_schemas() -> None:
    names = [f"f{i:02}" for i in range(len(MAPPINGS))][::-1]
    schema = {"type": "record", "name": "R", "namespace": "x", "fields": [
        {"name": name, "type": avro} for name, (avro, _) in zip(names, MAPPINGS, strict=True)]}
    t = arrow_of(schema)
    assert t.names == names
    assert all(f.nullable for f in _fields(t))


def test_named_types_resolve_across_namespaces_and_references() -> None:
    money = RegisteredSchema(json.dumps({"type": "record", "name": "Money", "namespace": "shop.common", "fields": [
        {"name": "units", "type": "long"}, {"name": "currency", "type": {
            "type": "enum", "name": "Currency", "symbols": ["EUR", "USD"]}}]}), subject="money", version=2)
    order = RegisteredSchema(json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "total", "type": "shop.common.Money"},
        {"name": "refund", "type": ["null", "shop.common.Money"]},
        {"name": "currencies", "type": {"type": "array", "items": "shop.common.Currency"}},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "namespace": "other", "fields": [
            {"name": "again", "type": "shop.common.Money"}]}},
        {"name": "same", "type": "other.Inner"}]}),
        references=(SchemaReference("shop.common.Money", "money", 2),), id=9, subject="orders-value", version=1)
    money_t = pa.struct([("units", pa.int64()), ("currency", pa.string())])
    inner_t = pa.struct([("again", money_t)])
    decoder = avro_decoder(order, Source({9: order}, {("money", 2): money}))
    assert decoder.arrow_type == pa.struct([("total", money_t), ("refund", money_t),
                                            ("currencies", pa.list_(pa.string())), ("inner", inner_t),
                                            ("same", inner_t)])


NODE = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]},
    {"name": "kids", "type": {"type": "array", "items": "Node"}}]}


def test_recursive_reader_needs_recursive_field_max_depth() -> None:
    with pytest.raises(ConfigError, match="recursiveFieldMaxDepth"):
        arrow_of(NODE)
    with pytest.raises(ConfigError, match="recursiveFieldMaxDepth"):
        arrow_of(NODE, {"recursiveFieldMaxDepth": "0"})
    assert arrow_of(NODE, {"recursiveFieldMaxDepth": "1"}) == pa.struct([("v", pa.int32())])
    level = pa.struct([("v", pa.int32())])
    assert arrow_of(NODE, {"RECURSIVEFIELDMAXDEPTH": "2"}) == pa.struct(
        [("v", pa.int32()), ("next", level), ("kids", pa.list_(level))])


@pytest.mark.parametrize("options", [{"recursiveFieldMaxDepth": "16"}, {"recursiveFieldMaxDepth": "two"},
                                     {"enableStableIdentifiersForUnionType": "yes"}])
def test_bad_options_are_config_errors(options: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=next(iter(options))):
        arrow_of("string", options)


def test_options_of_other_codecs_are_ignored() -> None:
    assert arrow_of("string", {"enums.as.ints": "true", "validate": "false"}) == pa.string()


def test_stable_union_member_names() -> None:
    union = ["null", "int", "string", {"type": "record", "name": "a.Label", "fields": []},
             {"type": "map", "values": "int"}]
    on = {"enableStableIdentifiersForUnionType": "true"}
    assert field_type_with(union, on) == pa.struct([
        ("member_int", pa.int32()), ("member_string", pa.string()), ("member_Label", pa.struct([])),
        ("member_map", pa.map_(pa.string(), pa.int32()))])
    assert field_type_with(union, {**on, "stableIdentifierPrefixForUnionType": "u_"}).names == [
        "u_int", "u_string", "u_Label", "u_map"]
    clash = ["int", {"type": "enum", "name": "Int", "symbols": ["A"]}]
    with pytest.raises(ConfigError, match="name conflict of type name Int"):
        field_type_with(clash, on)


def field_type_with(avro: Any, options: dict[str, str]) -> pa.DataType:
    return arrow_of({"type": "record", "name": "R", "fields": [{"name": "f", "type": avro}]}, options).field("f").type


@pytest.mark.parametrize(("avro", "message"), [
    ({"type": "bytes", "logicalType": "decimal", "precision": 39}, "38"),
    ({"type": "int", "spark.sql.catalyst.type": "interval year to month"}, "spark.sql.catalyst.type"),
])
def test_types_spark_refuses_are_config_errors(avro: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        field_type(avro)


def test_a_reader_that_does_not_parse_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="does not parse"):
        arrow_of({"type": "record", "name": "R", "fields": [{"name": "f", "type": "Nowhere"}]})
    with pytest.raises(ConfigError, match="does not parse"):
        avro_decoder(RegisteredSchema("{not json", id=1), Source())


# ---- Arrow -> Avro ---------------------------------------------------------------------------------

def test_avro_schema_for_follows_spark_avro_to_avro_type() -> None:
    t = pa.struct([
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("small", pa.int16()),
        ("price", pa.decimal128(12, 2)),
        ("when", pa.timestamp("us", tz="UTC")),
        ("local", pa.timestamp("us")),
        ("day", pa.date32()),
        ("at", pa.time64("ns")),
        ("took", pa.duration("us")),
        ("blob", pa.binary()),
        ("nothing", pa.null()),
        ("tags", pa.list_(pa.field("item", pa.string(), nullable=False))),
        ("attrs", pa.map_(pa.string(), pa.float64())),
        ("address", pa.struct([("street", pa.string()), ("geo", pa.struct([("lat", pa.float32())])),
                               ("amount", pa.decimal128(38, 0))])),
        ("items", pa.list_(pa.struct([("sku", pa.string())]))),
    ])
    assert json.loads(avro_schema_for(t)) == {"type": "record", "name": "topLevelRecord", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["string", "null"]},
        {"name": "small", "type": ["int", "null"]},
        {"name": "price", "type": [{"type": "fixed", "name": "fixed", "namespace": "topLevelRecord.price", "size": 6,
                                    "logicalType": "decimal", "precision": 12, "scale": 2}, "null"]},
        {"name": "when", "type": [{"type": "long", "logicalType": "timestamp-micros"}, "null"]},
        {"name": "local", "type": [{"type": "long", "logicalType": "local-timestamp-micros"}, "null"]},
        {"name": "day", "type": [{"type": "int", "logicalType": "date"}, "null"]},
        {"name": "at", "type": [{"type": "long", "logicalType": "time-micros",
                                 "spark.sql.catalyst.type": "time(6)"}, "null"]},
        {"name": "took", "type": [{"type": "long", "spark.sql.catalyst.type": "interval day to second"}, "null"]},
        {"name": "blob", "type": ["bytes", "null"]},
        {"name": "nothing", "type": "null"},
        {"name": "tags", "type": [{"type": "array", "items": "string"}, "null"]},
        {"name": "attrs", "type": [{"type": "map", "values": ["double", "null"]}, "null"]},
        {"name": "address", "type": [{"type": "record", "name": "address", "namespace": "topLevelRecord", "fields": [
            {"name": "street", "type": ["string", "null"]},
            {"name": "geo", "type": [{"type": "record", "name": "geo", "namespace": "topLevelRecord.address",
                                      "fields": [{"name": "lat", "type": ["float", "null"]}]}, "null"]},
            {"name": "amount", "type": [{"type": "fixed", "name": "fixed", "namespace": "topLevelRecord.address.amount",
                                         "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0},
                                        "null"]}]}, "null"]},
        {"name": "items", "type": [{"type": "array", "items": [{"type": "record", "name": "items",
                                                                 "namespace": "topLevelRecord", "fields": [
                                                                     {"name": "sku", "type": ["string", "null"]}]},
                                                                "null"]}, "null"]},
    ]}
    fastavro.parse_schema(json.loads(avro_schema_for(t)))  # a valid schema: every named type defined once


def test_avro_schema_for_names_and_non_struct_columns() -> None:
    assert json.loads(avro_schema_for(pa.struct([("a", pa.int32())]), "Order", "shop")) == {
        "type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "a", "type": ["int", "null"]}]}
    assert json.loads(avro_schema_for(pa.string())) == "string"
    assert json.loads(avro_schema_for(pa.decimal128(9, 3))) == {
        "type": "fixed", "name": "fixed", "namespace": "topLevelRecord", "size": 4, "logicalType": "decimal",
        "precision": 9, "scale": 3}


@pytest.mark.parametrize(("precision", "size"), [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (18, 8), (19, 9),
                                                 (38, 16)])
def test_decimal_fixed_sizes_are_sparks_min_bytes_for_precision(precision: int, size: int) -> None:
    assert json.loads(avro_schema_for(pa.decimal128(precision, 0)))["size"] == size


@pytest.mark.parametrize("t", [pa.map_(pa.int32(), pa.string()), pa.uint32(), pa.float16()])
def test_avro_schema_for_refuses_types_spark_has_no_avro_form_for(t: pa.DataType) -> None:
    with pytest.raises(ConfigError):
        avro_schema_for(pa.struct([("f", t)]))


def test_avro_schema_for_reads_back_as_the_same_arrow_type() -> None:
    t = pa.struct([(name, avro_t) for name, avro_t in [
        ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()), ("d", pa.float64()), ("b", pa.bool_()),
        ("s", pa.string()), ("raw", pa.binary()), ("dec", pa.decimal128(20, 4)), ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("tm", pa.time64("ns")),
        ("iv", pa.duration("us")), ("n", pa.null()), ("arr", pa.list_(pa.struct([("x", pa.int32())]))),
        ("m", pa.map_(pa.string(), pa.list_(pa.decimal128(5, 1)))), ("rec", pa.struct([("y", pa.string())]))]])
    assert arrow_of(json.loads(avro_schema_for(t))) == t


# ---- Spark DDL -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("t", "ddl"), [
    (pa.int8(), "TINYINT"), (pa.int16(), "SMALLINT"), (pa.int32(), "INT"), (pa.int64(), "BIGINT"),
    (pa.float32(), "FLOAT"), (pa.float64(), "DOUBLE"), (pa.bool_(), "BOOLEAN"), (pa.string(), "STRING"),
    (pa.large_string(), "STRING"), (pa.binary(), "BINARY"), (pa.binary(16), "BINARY"),
    (pa.decimal128(12, 2), "DECIMAL(12,2)"), (pa.date32(), "DATE"), (pa.timestamp("us", tz="UTC"), "TIMESTAMP"),
    (pa.timestamp("us"), "TIMESTAMP_NTZ"), (pa.duration("us"), "INTERVAL DAY TO SECOND"),
    (pa.time64("ns"), "TIME(6)"), (pa.null(), "VOID"),
    (pa.list_(pa.string()), "ARRAY<STRING>"), (pa.map_(pa.string(), pa.int64()), "MAP<STRING, BIGINT>"),
    (pa.struct([]), "STRUCT<>"),
    (pa.struct([("a", pa.int32()), pa.field("b c", pa.list_(pa.struct([("x`y", pa.string())])), nullable=False)]),
     "STRUCT<`a`: INT, `b c`: ARRAY<STRUCT<`x``y`: STRING>> NOT NULL>"),
])
def test_arrow_to_spark_ddl(t: pa.DataType, ddl: str) -> None:
    assert arrow_to_spark_ddl(t) == ddl


def test_struct_fields_ddl_is_a_dataframe_schema() -> None:
    t = pa.struct([("id", pa.int64()), pa.field("v", pa.struct([("a", pa.date32())]), nullable=False)])
    assert struct_fields_ddl(t) == "`id` BIGINT, `v` STRUCT<`a`: DATE> NOT NULL"


def test_arrow_to_spark_ddl_refuses_types_spark_lacks() -> None:
    with pytest.raises(ConfigError, match="uint32"):
        arrow_to_spark_ddl(pa.struct([("u", pa.uint32())]))


def test_a_top_level_union_of_a_referenced_type_decodes() -> None:
    address = RegisteredSchema(json.dumps({"type": "record", "name": "Address", "namespace": "com.x", "fields": [
        {"name": "s", "type": "string"}]}), subject="address", version=1)
    top = RegisteredSchema(json.dumps(["null", "com.x.Address"]),
                           references=(SchemaReference("com.x.Address", "address", 1),), id=5)
    decoder = avro_decoder(top, Source({5: top}, {("address", 1): address}))
    assert decoder.arrow_type == pa.struct([("s", pa.string())])
    assert decoder.decode(5, (), b"\x02\x02x") == {"s": "x"}
    assert decoder.decode(5, (), b"\x00") is None
    encoder = avro_encoder(top, Source({5: top}, {("address", 1): address}))
    assert encoder.encode({"s": "x"}) == ((), b"\x02\x02x")
    assert encoder.encode(None) == ((), b"\x00")

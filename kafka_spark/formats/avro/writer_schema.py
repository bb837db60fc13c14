"""Avro schemas derived from Arrow column types, as spark-avro's `SchemaConverters.toAvroType` derives them
(for `to_avro` and a sink writing Avro without a given schema)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kafka_spark.errors import ConfigError
from kafka_spark.formats.avro.types import CATALYST_TYPE


def avro_schema_for(arrow_type: pa.DataType, record_name: str = "topLevelRecord", namespace: str = "") -> str:
    """The Avro schema (JSON text) spark-avro's `SchemaConverters.toAvroType` makes for a column of `arrow_type`
    (as Spark sees it): nullable fields become `[type, "null"]` unions, nested records are named after their
    field in the namespace of the records around them, decimals are `fixed` of the fewest bytes that hold
    their precision, timestamps `timestamp-micros` (without time zone `local-timestamp-micros`).

    ConfigError for a type Spark has no Avro form for (a map whose keys are not strings, unsigned integers).
    """
    return json.dumps(_avro(arrow_type, False, record_name, namespace), separators=(",", ":"))


def _avro(t: pa.DataType, nullable: bool, name: str, namespace: str) -> Any:
    schema = _avro_plain(t, name, namespace)
    return [schema, "null"] if nullable and not pa.types.is_null(t) else schema


def _avro_plain(t: pa.DataType, name: str, namespace: str) -> Any:
    if pa.types.is_dictionary(t):
        return _avro_plain(t.value_type, name, namespace)
    simple = _AVRO_SIMPLE.get(t.id)
    if simple is not None:
        return simple
    if pa.types.is_timestamp(t):
        return {"type": "long", "logicalType": "timestamp-micros" if t.tz else "local-timestamp-micros"}
    if pa.types.is_time(t):
        return {"type": "long", "logicalType": "time-micros", CATALYST_TYPE: "time(6)"}
    if pa.types.is_duration(t):
        return {"type": "long", CATALYST_TYPE: "interval day to second"}
    if pa.types.is_decimal(t):
        fixed = {"type": "fixed", "name": "fixed", "namespace": f"{namespace}.{name}" if namespace else name,
                 "size": _min_bytes(t.precision), "logicalType": "decimal", "precision": t.precision,
                 "scale": t.scale}
        return fixed
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = t.value_field
        return {"type": "array", "items": _avro(item.type, item.nullable, name, namespace)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise ConfigError(f"Avro maps have string keys; a map with {t.key_type} keys has no Avro form")
        item = t.item_field
        return {"type": "map", "values": _avro(item.type, item.nullable, name, namespace)}
    if pa.types.is_struct(t):
        inner = f"{namespace}.{name}" if namespace else name
        record: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            record["namespace"] = namespace
        record["fields"] = [{"name": f.name, "type": _avro(f.type, f.nullable, f.name, inner)} for f in t]
        return record
    raise ConfigError(f"no Avro type for Arrow type {t}")


_AVRO_SIMPLE: dict[int, Any] = {
    pa.bool_().id: "boolean", pa.int8().id: "int", pa.int16().id: "int", pa.int32().id: "int",
    pa.int64().id: "long", pa.float32().id: "float", pa.float64().id: "double", pa.string().id: "string",
    pa.large_string().id: "string", pa.binary().id: "bytes", pa.large_binary().id: "bytes", pa.null().id: "null",
    pa.date32().id: {"type": "int", "logicalType": "date"},
}
_AVRO_SIMPLE[pa.binary(4).id] = "bytes"  # every fixed-size binary type shares this id


def _min_bytes(precision: int) -> int:
    # Spark's Decimal.minBytesForPrecision: the fewest bytes whose signed range holds 10^precision
    size = 1
    while (1 << (8 * size - 1)) < 10 ** precision:
        size += 1
    return size

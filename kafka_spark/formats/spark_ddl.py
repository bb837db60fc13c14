"""Arrow types as Spark SQL DDL text (`STRUCT<`a`: INT>`), for declaring decoded columns to Spark without
importing pyspark; the inverse of PySpark's Arrow conversion for the types the payload codecs produce."""

from __future__ import annotations

import pyarrow as pa

from kafka_spark.errors import ConfigError

_SIMPLE = {
    pa.bool_(): "BOOLEAN", pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
    pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.string(): "STRING", pa.large_string(): "STRING",
    pa.binary(): "BINARY", pa.large_binary(): "BINARY", pa.date32(): "DATE", pa.null(): "VOID",
}


def quote(name: str) -> str:
    """`name` back-quoted for Spark SQL (a back-quote inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def arrow_to_spark_ddl(t: pa.DataType) -> str:
    """The Spark SQL type of Arrow type `t`: STRUCT<`name`: T, ...>, ARRAY<T>, MAP<K, V>, DECIMAL(p,s),
    TIMESTAMP (with a time zone) or TIMESTAMP_NTZ, INTERVAL DAY TO SECOND for durations, TIME(6), VOID for null;
    a struct field that is not nullable gets NOT NULL. ConfigError for a type Spark has no counterpart of."""
    simple = _SIMPLE.get(t)
    if simple is not None:
        return simple
    if pa.types.is_struct(t):
        return f"STRUCT<{', '.join(_field(f, ': ') for f in t)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"ARRAY<{arrow_to_spark_ddl(t.value_type)}>"
    if pa.types.is_map(t):
        return f"MAP<{arrow_to_spark_ddl(t.key_type)}, {arrow_to_spark_ddl(t.item_type)}>"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_duration(t):
        return "INTERVAL DAY TO SECOND"
    if pa.types.is_time(t):
        return "TIME(6)"
    if pa.types.is_fixed_size_binary(t):
        return "BINARY"
    if pa.types.is_dictionary(t):
        return arrow_to_spark_ddl(t.value_type)
    raise ConfigError(f"Spark has no type for Arrow type {t}")


def struct_fields_ddl(t: pa.StructType) -> str:
    """The fields of `t` in the `name T, name T` form of a DataFrame schema (`StructType.fromDDL`)."""
    return ", ".join(_field(f, " ") for f in t)


def _field(f: pa.Field, separator: str) -> str:
    return f"{quote(f.name)}{separator}{arrow_to_spark_ddl(f.type)}{'' if f.nullable else ' NOT NULL'}"

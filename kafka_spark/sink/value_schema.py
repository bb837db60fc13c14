"""JSON values parsed with a Spark DDL schema (`value_schema`), as Spark's `from_json` parses them.

The schema is checked once, on the driver (`value_struct`); a value is bad when it is not null and is
empty, not JSON, or JSON that does not fit the schema. What happens to a bad record (a typed failure or a
dead-letter table: sink/dead_letters.py) is the table format's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import StructType

# The column a PERMISSIVE parse keeps a value's text in when it does not fit; refused as a field name.
CORRUPT = "_kafka_spark_corrupt"


def value_struct(spark: Any, ddl: str) -> StructType:
    """The struct `ddl` describes; ConfigError for a DDL Spark cannot parse or that is not a list of fields."""
    from pyspark.errors import PySparkException
    from pyspark.sql.types import DataType, StructType

    # Spark's DDL parser runs in the JVM: touching the context starts a session made lazily.
    spark.sparkContext  # noqa: B018
    try:
        parsed = DataType.fromDDL(ddl)
    except PySparkException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"value_schema {ddl!r} is not a Spark DDL schema: {first}") from None
    if not isinstance(parsed, StructType) or not parsed.fields:
        raise ConfigError(f"value_schema {ddl!r}: expected fields such as 'id BIGINT, name STRING', "
                          f"got {parsed.simpleString()}")
    if CORRUPT in parsed.fieldNames():
        raise ConfigError(f"value_schema {ddl!r}: the field name {CORRUPT} is reserved")
    return parsed


def require_schema(dead_letter: str | None, value_schema: str | None, decoded: bool = False,
                   changes: bool = False) -> None:
    """A dead-letter table needs a value schema or a registry format: without one no record is bad (change events
    are bad when their envelope cannot be applied, with or without one)."""
    if dead_letter and not value_schema and not decoded and not changes:
        raise ConfigError("dead_letter (--dead-letter) needs value_schema (--value-schema) or a value format "
                          "(--value-format avro|protobuf|json-schema): records are bad when their value does not "
                          "parse or decode")
    if value_schema and decoded:
        raise ConfigError("value_schema (--value-schema) parses JSON values without a registry; with "
                          "value_format (--value-format) the registry's schema decodes them: give one of the two")


def bad_value_reason(text: Column, ddl: str) -> Column:
    """Why a value did not parse with `ddl`: not JSON at all, or JSON that does not fit the schema."""
    from pyspark.sql import functions as F

    schema = " ".join(ddl.split())
    return (F.when(F.try_parse_json(text).isNull(), F.lit("not valid JSON"))
            .otherwise(F.lit(f"does not match the schema {schema}")))

"""The output schema of Spark's built-in Kafka source, as Spark DDL, and with decoded keys and values."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_spark.formats.plan import PayloadPlan

KAFKA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"


def kafka_ddl(include_headers: bool, plan: PayloadPlan | None = None) -> str:
    """Spark's Kafka schema, with the `headers` column when `include_headers`; with `plan`, `key`/`value` are
    its decoded types and a PERMISSIVE read's columns follow."""
    ddl = f"{KAFKA_DDL}, {HEADERS_DDL}" if include_headers else KAFKA_DDL
    if plan is None:
        return ddl
    from kafka_spark.formats.columns import decoded_types, extra_fields
    from kafka_spark.formats.spark_ddl import arrow_to_spark_ddl

    for side, arrow_type in decoded_types(plan).items():
        ddl = ddl.replace(f"{side} binary", f"{side} {arrow_to_spark_ddl(arrow_type)}", 1)
    extras = ", ".join(f"{f.name} {arrow_to_spark_ddl(f.type)}" for f in extra_fields(plan))
    return f"{ddl}, {extras}" if extras else ddl

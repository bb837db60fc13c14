"""The output schema of Spark's built-in Kafka source, as Spark DDL."""

from __future__ import annotations

KAFKA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"


def kafka_ddl(include_headers: bool) -> str:
    """Spark's Kafka schema, with the `headers` column when `include_headers`."""
    return f"{KAFKA_DDL}, {HEADERS_DDL}" if include_headers else KAFKA_DDL

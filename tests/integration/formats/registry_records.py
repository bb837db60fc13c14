"""Records framed by Confluent's own serializers (the oracle), produced to a real broker, for the read tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kafka_spark.client.producer.producer import Producer

ORDER_V1 = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}},
        {"name": "score", "type": ["null", "double"], "default": None},
    ],
}
# v2 adds a field with a default: BACKWARD compatible, so v1 records read with v2 get the default.
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "channel", "type": "string", "default": "web"}]}


def order(i: int) -> dict[str, Any]:
    """The i-th order as Confluent's Avro serializer takes it."""
    import datetime
    import decimal

    return {
        "id": i, "customer": f"c{i % 7}", "amount": decimal.Decimal(f"{i}.{i % 100:02d}"),
        "placed": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i),
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 30),
        "tags": [f"t{j}" for j in range(i % 3)], "attrs": {"n": i, "m": -i},
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "address": {"street": f"{i} Main St", "zip": None if i % 2 else f"{10000 + i}"},
        "score": None if i % 4 == 0 else i / 4,
    }


def avro_serializer(client: Any, schema: dict[str, Any], **conf: Any) -> Any:
    from confluent_kafka.schema_registry.avro import AvroSerializer

    return AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True, **conf})


def serialize(serializer: Any, topic: str, values: Sequence[Any], field: str = "value") -> list[bytes | None]:
    """Each value as the serializer frames it for `topic` (None stays a tombstone)."""
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext(topic, MessageField.VALUE if field == "value" else MessageField.KEY)
    return [None if v is None else serializer(v, ctx) for v in values]


def produce(bootstrap: str, topic: str, values: Sequence[bytes | None],
            keys: Sequence[bytes | None] | None = None) -> None:
    """Send the values (to partition 0, in order) and wait for them."""
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        producer.send_many(topic, list(values), keys=None if keys is None else list(keys),
                           partitions=[0] * len(values)).get()
        producer.flush()


def read_options(registry_url: str, bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "schema.registry.url": registry_url,
            "valueFormat": "avro", **extra}

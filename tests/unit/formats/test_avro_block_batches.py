"""Whole fetched batches through `decode_batch` with the Avro block path on and off (KAFKA_SPARK_AVRO_BLOCK=0):
several schema ids in one batch, corrupt datums, bad framing and tombstones among good records, keys and values,
PERMISSIVE and FAILFAST, `schemaEvolutionMode=restart`: the same batch, the same errors, the same offsets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from harness.schema_registry import RegistryServer

from kafka_spark.errors import KafkaSparkError
from kafka_spark.formats.avro.columnar import SWITCH
from kafka_spark.formats.columns import decode_batch
from kafka_spark.formats.options import payload_options
from kafka_spark.formats.plan import plan_payloads
from kafka_spark.formats.registry.wire import frame

pytest.importorskip("datafusion")

TOPIC = "orders"
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": ["null", "string"], "default": None},
                       {"name": "qty", "type": "int", "default": 1}]}
KEY = {"type": "record", "name": "Key", "fields": [{"name": "k", "type": "string"}]}


@pytest.fixture(scope="module")
def registry() -> Iterator[RegistryServer]:
    with RegistryServer() as server:
        yield server


def serialized(server: RegistryServer, schema: dict[str, Any], values: list[Any], key: bool = False) -> list[bytes]:
    serializer = AvroSerializer(SchemaRegistryClient({"url": server.url}), json.dumps(schema))
    ctx = SerializationContext(TOPIC, MessageField.KEY if key else MessageField.VALUE)
    return [serializer(v, ctx) for v in values]


def kafka_batch(values: list[bytes | None], keys: list[bytes | None] | None = None) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys or [None] * n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": [TOPIC] * n, "partition": pa.array([0] * n, pa.int32()), "offset": list(range(100, 100 + n))})


def both_ways(monkeypatch: pytest.MonkeyPatch, server: RegistryServer, batch: pa.RecordBatch,
              **options: str) -> tuple[Any, Any]:
    """decode_batch's result (or the error's type and text) with the block path on, then off."""
    parsed = payload_options({"valueFormat": "avro", "schema.registry.url": server.url, **options})
    assert parsed is not None
    plan = plan_payloads(parsed, (TOPIC,))
    out = []
    for switch in ("1", "0"):
        monkeypatch.setenv(SWITCH, switch)
        try:
            out.append(decode_batch(batch, plan))
        except KafkaSparkError as exc:
            out.append((type(exc), str(exc)))
    return out[0], out[1]


def records(server: RegistryServer) -> tuple[list[bytes], list[bytes]]:
    old = serialized(server, V1, [{"id": i, "tags": ["a"] * (i % 3), "ts": 1_700_000_000_000 + i}
                                  for i in range(30)])
    new = serialized(server, V2, [{"id": 100 + i, "tags": [], "ts": 5, "note": "n" if i % 2 else None, "qty": i}
                                  for i in range(30)])
    return old, new


def test_a_batch_of_two_schema_ids_tombstones_and_bad_records_is_the_same_both_ways(
        registry: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = records(registry)
    corrupt = old[3][:8]  # truncated inside the datum
    trailing = new[4] + b"\x00\x01"  # bytes after the value: read as the per-record path reads them
    huge = old[0][:5] + bytes.fromhex("02feffffffffffffffff7f")  # id 1, then an array count of 2^62
    values = [*old[:10], None, corrupt, *new[:10], trailing, b"\x01junk", huge, frame(424242, b"\x02"),
              *old[10:], *new[10:]]
    on, off = both_ways(monkeypatch, registry, kafka_batch(values), mode="PERMISSIVE")
    assert on.equals(off)
    assert on.column("valueError").null_count == len(values) - 4  # truncated, framing, huge count, unknown id
    got = on.column("value").to_pylist()
    assert got[0] == {"id": 0, "tags": [], "ts": got[0]["ts"], "note": None, "qty": 1}
    on, off = both_ways(monkeypatch, registry, kafka_batch(values))  # FAILFAST: the first bad record, offset 111
    assert on == off
    assert "orders [0] offset 111" in on[1]


def test_keys_and_values_decode_the_same_both_ways(registry: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = records(registry)
    keys = serialized(registry, KEY, [{"k": f"k{i}"} for i in range(60)], key=True)
    batch = kafka_batch([*old, *new], [*keys[:30], None, *keys[31:]])
    on, off = both_ways(monkeypatch, registry, batch, keyFormat="avro")
    assert on.equals(off)
    assert on.column("key").to_pylist()[:2] == [{"k": "k0"}, {"k": "k1"}]


def test_restart_mode_stops_at_the_same_record_both_ways(registry: RegistryServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = records(registry)
    batch = kafka_batch([*old[:5], b"\x00", *new[:3]])
    on, off = both_ways(monkeypatch, registry, batch, valueSchemaVersion="1", schemaEvolutionMode="restart",
                        mode="PERMISSIVE")
    assert on == off
    assert "offset 106" in on[1] and "newer version" in on[1]
    pinned_on, pinned_off = both_ways(monkeypatch, registry, kafka_batch([*old, *new]), valueSchemaVersion="1")
    assert pinned_on.equals(pinned_off)

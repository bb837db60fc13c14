"""Decoding a fetched batch in place (`kafka_spark.formats.columns`): records framed by Confluent's Avro serializer
against the test registry become the objects it was given; bad records fail naming their offset or are kept with
the reason; `schemaEvolutionMode=restart` stops on a newer version; the options are checked before any I/O."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from harness.schema_registry import RegistryServer

from kafka_spark.errors import ConfigError, PayloadError, SchemaChangedError, SchemaRegistryError
from kafka_spark.formats.columns import decode_batch, extra_fields
from kafka_spark.formats.options import payload_options
from kafka_spark.formats.plan import PayloadPlan, plan_payloads
from kafka_spark.formats.registry.wire import frame

TOPIC = "payments"
V1 = {"type": "record", "name": "Payment", "namespace": "shop",
      "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


@pytest.fixture
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
        "topic": [TOPIC] * n, "partition": pa.array([2] * n, pa.int32()), "offset": list(range(40, 40 + n))})


def decode(server: RegistryServer, batch: pa.RecordBatch, **options: str) -> pa.RecordBatch:
    parsed = payload_options({"valueFormat": "avro", "schema.registry.url": server.url, **options})
    assert parsed is not None
    return decode_batch(batch, plan_payloads(parsed, (TOPIC,)))


def test_values_and_keys_decode_and_tombstones_stay_null(registry: RegistryServer) -> None:
    values = serialized(registry, V1, [{"id": 1, "note": "a"}, {"id": 2, "note": None}])
    keys = serialized(registry, {"type": "record", "name": "K", "fields": [{"name": "k", "type": "string"}]},
                      [{"k": "x"}, {"k": "y"}], key=True)
    out = decode(registry, kafka_batch([*values, None], [*keys, None]), keyFormat="avro")
    assert out.column("value").to_pylist() == [{"id": 1, "note": "a"}, {"id": 2, "note": None}, None]
    assert out.column("key").to_pylist() == [{"k": "x"}, {"k": "y"}, None]
    assert out.schema.names == ["key", "value", "topic", "partition", "offset"]


def test_older_writers_resolve_to_the_latest_schema_and_a_pin_keeps_the_older(registry: RegistryServer) -> None:
    old = serialized(registry, V1, [{"id": 1, "note": None}])
    new = serialized(registry, V2, [{"id": 2, "note": "b", "currency": "USD"}])
    latest = decode(registry, kafka_batch(old + new))
    assert latest.column("value").to_pylist() == [{"id": 1, "note": None, "currency": "EUR"},
                                                  {"id": 2, "note": "b", "currency": "USD"}]
    pinned = decode(registry, kafka_batch(old + new), valueSchemaVersion="1")
    assert pinned.column("value").to_pylist() == [{"id": 1, "note": None}, {"id": 2, "note": "b"}]
    newer = r"payments \[2\] offset 41: .*newer version of subject 'payments-value'"
    with pytest.raises(SchemaChangedError, match=newer):
        decode(registry, kafka_batch(old + new), valueSchemaVersion="1", schemaEvolutionMode="restart")


def test_bad_records_fail_with_their_offset_or_are_kept_with_reason_and_bytes(registry: RegistryServer) -> None:
    good = serialized(registry, V1, [{"id": 7, "note": None}])[0]
    bad = [b"\x03xyz!!", frame(31337, b"\x02"), good[:6], b""]
    batch = kafka_batch([good, *bad])
    with pytest.raises(PayloadError, match=r"payments \[2\] offset 41: the value does not decode with subject "
                                           r"'payments-value' version 1 \(id \d+\): magic byte 0x03"):
        decode(registry, batch)

    kept = decode(registry, batch, mode="PERMISSIVE")
    assert kept.schema.names[-3:] == ["valueError", "rawKey", "rawValue"]
    assert kept.column("value").to_pylist() == [{"id": 7, "note": None}, None, None, None, None]
    assert kept.column("rawValue").to_pylist() == [None, *bad]
    reasons = kept.column("valueError").to_pylist()
    assert reasons[0] is None and all(reasons[1:])
    assert "31337" in reasons[2]


def test_a_value_the_column_cannot_hold_is_that_records_error_alone(registry: RegistryServer) -> None:
    # JSON's "\\ud800" (a lone surrogate) decodes to a str that no Arrow string holds: its record fails (FAILFAST,
    # naming its offset) or is kept with the reason (PERMISSIVE); the batch's other records stand.
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}}
    schema_id = SchemaRegistryClient({"url": registry.url}).register_schema(f"{TOPIC}-value",
                                                                             Schema(json.dumps(schema), "JSON"))
    payloads = [b'{"id": 1, "note": "fine"}', b'{"id": 2, "note": "\\ud800"}', b'{"id": 3, "note": "\\u00e9"}']
    batch = kafka_batch([frame(schema_id, p) for p in payloads])
    options = {"valueFormat": "json-schema", "schema.registry.url": registry.url}
    strict = payload_options(options)
    assert strict is not None
    with pytest.raises(PayloadError, match=r"payments \[2\] offset 41: the value does not decode with .*does not "
                                           r"fit the column type .*surrogates not allowed"):
        decode_batch(batch, plan_payloads(strict, (TOPIC,)))
    permissive = payload_options({**options, "mode": "PERMISSIVE"})
    assert permissive is not None
    kept = decode_batch(batch, plan_payloads(permissive, (TOPIC,)))
    assert kept.column("value").to_pylist() == [{"id": 1, "note": "fine"}, None, {"id": 3, "note": "\u00e9"}]
    reasons = kept.column("valueError").to_pylist()
    assert reasons[0] is None and reasons[2] is None and "surrogates not allowed" in reasons[1]
    assert kept.column("rawValue").to_pylist()[1] == batch.column("value")[1].as_py()


def test_options_are_checked_before_any_request() -> None:
    assert payload_options({"subscribe": "t"}) is None
    with pytest.raises(ConfigError, match=r"schema\.registry\.url"):
        payload_options({"valueFormat": "avro"})
    with pytest.raises(ConfigError, match="valueFormat"):
        payload_options({"valueFormat": "thrift", "schema.registry.url": "http://r"})
    with pytest.raises(ConfigError, match="needs valueFormat or keyFormat"):
        payload_options({"valueSubject": "s"})
    with pytest.raises(ConfigError, match="mode"):
        payload_options({"valueFormat": "avro", "schema.registry.url": "http://r", "mode": "LENIENT"})
    parsed = payload_options({"valueFormat": "avro", "schema.registry.url": "http://r"})
    assert parsed is not None and parsed.value is not None
    with pytest.raises(ConfigError, match="Set valueSubject"):
        parsed.value.subject_for(("a", "b"))
    assert parsed.value.subject_for(("orders",)) == "orders-value"
    assert extra_fields(PayloadPlan(parsed)) == []


def test_an_unknown_subject_is_a_config_error_naming_it(registry: RegistryServer) -> None:
    parsed = payload_options({"valueFormat": "avro", "schema.registry.url": registry.url})
    assert parsed is not None
    with pytest.raises(ConfigError, match="no subject 'nowhere-value'"):
        plan_payloads(parsed, ("nowhere",))


@pytest.mark.parametrize(("strategy", "subject"), [
    ("RecordNameStrategy", "shop.Payment"),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", "payments-shop.Payment"),
])
def test_record_strategies_find_the_subject_the_serializer_used(registry: RegistryServer, strategy: str,
                                                                subject: str) -> None:
    from confluent_kafka.schema_registry import record_subject_name_strategy, topic_record_subject_name_strategy

    namer = (record_subject_name_strategy if strategy == "RecordNameStrategy"
             else topic_record_subject_name_strategy)
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(V1),
                                conf={"subject.name.strategy": namer})
    value = serializer({"id": 3, "note": "x"}, SerializationContext(TOPIC, MessageField.VALUE))
    assert [s for s in SchemaRegistryClient({"url": registry.url}).get_subjects()] == [subject]
    out = decode(registry, kafka_batch([value]), valueSubjectNameStrategy=strategy, valueRecordName="shop.Payment")
    assert out.column("value").to_pylist() == [{"id": 3, "note": "x"}]


@pytest.mark.parametrize("evolution", ["none", "restart"])
def test_an_unknown_schema_id_is_the_record_s_error_in_every_evolution_mode(registry: RegistryServer,
                                                                           evolution: str) -> None:
    good = serialized(registry, V1, [{"id": 7, "note": None}])[0]
    unknown = frame(31337, b"\x02")
    batch = kafka_batch([good, unknown, good])
    kept = decode(registry, batch, mode="PERMISSIVE", schemaEvolutionMode=evolution)
    assert kept.column("value").to_pylist() == [{"id": 7, "note": None}, None, {"id": 7, "note": None}]
    assert kept.column("valueError").to_pylist() == [None, "schema id 31337 is not in the schema registry", None]
    assert kept.column("rawValue").to_pylist() == [None, unknown, None]
    with pytest.raises(PayloadError, match=r"payments \[2\] offset 41: the value does not decode with .*: "
                                           r"schema id 31337 is not in the schema registry"):
        decode(registry, batch, schemaEvolutionMode=evolution)


@pytest.mark.parametrize(("evolution", "asked"), [("none", "/schemas/ids/31337"),
                                                  ("restart", "/schemas/ids/31337/versions")])
def test_a_registry_outage_fails_the_task_in_every_mode_and_keeps_nothing(registry: RegistryServer, evolution: str,
                                                                         asked: str) -> None:
    good = serialized(registry, V1, [{"id": 7, "note": None}])[0]
    batch = kafka_batch([good, frame(31337, b"\x02")])
    options = {"schemaEvolutionMode": evolution, "schema.registry.max.retries": "0"}
    for mode in ("FAILFAST", "PERMISSIVE"):
        registry.fail_next(1, status=503, path=asked)
        with pytest.raises(SchemaRegistryError, match=r"payments \[2\] offset 41: cannot look up the value's schema "
                                                      r"id 31337: .*HTTP 503") as caught:
            decode(registry, batch, mode=mode, **options)
        assert caught.value.status == 503
    # the registry is back: the task's retry finds the id unknown, a record error (the outage was not kept)
    kept = decode(registry, batch, mode="PERMISSIVE", **options)
    assert kept.column("valueError").to_pylist() == [None, "schema id 31337 is not in the schema registry"]

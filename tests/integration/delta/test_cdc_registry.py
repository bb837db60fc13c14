"""Change data capture from registry-framed envelopes: Debezium's change events as its Avro converter shapes them
(envelope `before`/`after`/`source`/`op`/`ts_ms`, key `{id}`), serialised by Confluent's own Python serializer
against the test registry, applied to Delta exactly as the JSON envelopes are; a record that does not decode is
the batch's error, naming it, and never a delete."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from cdc_events import SourceTable, table_state
from delta_support import latest_offsets_of
from deltalake import DeltaTable

from kafka_spark.delta import load
from kafka_spark.sink import LoadOptions
from kafka_spark.sink.errors import ChangeEventError

pytestmark = [pytest.mark.integration, pytest.mark.spark]

_NAME = "dbserver1.public.customers"
_TYPES = {"id": "int", "name": "string", "qty": "long", "price": "double", "email": "string"}


def _value_record(columns: list[str]) -> dict[str, Any]:
    fields = [{"name": c, "type": _TYPES[c]} if c == "id" else {"name": c, "type": ["null", _TYPES[c]],
                                                                 "default": None} for c in columns]
    return {"type": "record", "name": "Value", "namespace": _NAME, "fields": fields}


def envelope_schema(columns: list[str]) -> dict[str, Any]:
    """Debezium's PostgreSQL envelope as its Avro converter writes it (the fields the sink reads, and more)."""
    source = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
        {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"}, {"name": "ts_ms", "type": "long"},
        {"name": "snapshot", "type": ["null", "string"], "default": None}, {"name": "db", "type": "string"},
        {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None}]}
    return {"type": "record", "name": "Envelope", "namespace": _NAME, "fields": [
        {"name": "before", "type": ["null", _value_record(columns)], "default": None},
        {"name": "after", "type": ["null", f"{_NAME}.Value"], "default": None},
        {"name": "source", "type": source}, {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {"name": "transaction", "type": ["null", "string"], "default": None}]}


KEY_SCHEMA = {"type": "record", "name": "Key", "namespace": _NAME, "fields": [{"name": "id", "type": "int"}]}


@dataclasses.dataclass
class AvroSourceTable(SourceTable):
    """The source table's change events framed with Confluent's Avro serializer, as Debezium's Avro converter
    sends them (auto-registered under `<topic>-key` and `<topic>-value`)."""

    registry_url: str = ""

    def _serializer(self, schema: dict[str, Any]) -> Any:
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return AvroSerializer(SchemaRegistryClient({"url": self.registry_url}), json.dumps(schema),
                              conf={"auto.register.schemas": True})

    def _context(self, field: str) -> Any:
        from confluent_kafka.serialization import MessageField, SerializationContext

        return SerializationContext(self.topic, MessageField.VALUE if field == "value" else MessageField.KEY)

    def encode_value(self, value: dict[str, Any]) -> bytes:
        schema = envelope_schema(self.columns)
        payload = {"before": None, "after": None, **value}
        return bytes(self._serializer(schema)(payload, self._context("value")))

    def encode_key(self, key: int) -> bytes:
        return bytes(self._serializer(KEY_SCHEMA)({"id": key}, self._context("key")))


@pytest.fixture(scope="module")
def registry() -> Iterator[Any]:
    from harness.schema_registry import RegistryServer

    with RegistryServer() as server:
        yield server


def _options(kafka, registry, topic: str, table: str, **extra) -> LoadOptions:
    return LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], cdc="debezium",
                       value_format="avro", key_format="avro", schema_registry={"url": registry.url}, **extra)


# delta-rs's MERGE (the default for a path table); the batch's rows are the same for Spark's (test_cdc.py)
def test_avro_envelopes_make_the_source_table_and_an_undecodable_record_fails_naming_it(
        kafka, spark, producer, topic_name, tmp_path, registry, asked="auto"):
    kafka.create_topic(topic_name, partitions=1)
    table = str(tmp_path / "customers")
    source = AvroSourceTable(producer, topic_name, with_schema=False, registry_url=registry.url)
    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": i + 0.5} for i in range(1, 6)])
    source.update(2, name="two", qty=20)
    source.delete(3)  # a delete, then its tombstone
    source.change_key(4, 40)
    source.flush()
    first = load(spark, _options(kafka, registry, topic_name, table, cdc_metadata=True, writer=asked))
    assert first.status == "committed"
    assert table_state(spark, table, source.columns) == source.expected()

    source.add_column("email")  # the subject's next version: the table gains the column
    source.update(1, email="one@example.com")
    source.insert({"id": 3, "name": "three again", "qty": 3, "price": 3.0, "email": None})
    source.flush()
    second = load(spark, _options(kafka, registry, topic_name, table, cdc_metadata=True, writer=asked))
    assert second.batch == first.batch + 1
    assert table_state(spark, table, source.columns) == source.expected()
    assert DeltaTable(table).history(1)[0]["operation"] == "MERGE"
    row = spark.read.format("delta").load(table).where("id = 1").select("__op", "__lsn").first()
    assert row["__op"] == "u" and row["__lsn"] == source.lsn - 8  # the row's last change and its position

    # A record that does not decode (not Confluent-framed) fails the batch naming it: its null value is no
    # tombstone, so nothing is deleted and nothing committed.
    version = DeltaTable(table).version()
    source.update(5, qty=55)  # a good change before it, in the same batch
    producer.send(topic_name, b"not avro", key=source.encode_key(1))
    producer.flush()
    bad_offset = sum(latest_offsets_of(kafka.bootstrap, topic_name).values()) - 1
    with pytest.raises(ChangeEventError, match="the value does not decode") as caught:
        load(spark, _options(kafka, registry, topic_name, table, writer=asked))
    assert caught.value.offset == bad_offset
    assert DeltaTable(table).version() == version
    source.rows[5]["qty"] = 5  # the good change was not applied either: the batch failed whole
    assert table_state(spark, table, source.columns) == source.expected()

"""Writing keys and values with registered schemas, without Spark: the writer schema each setting chooses, the
schema derived from a column type, and framed bytes that Confluent's own deserializers read back to the values."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from harness.schema_registry import RegistryServer
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.encoding import (
    InlineSource,
    WriteSide,
    encode_side,
    json_schema_for,
    resolved,
    subject_writer,
    with_derived,
    writer_choice,
)
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.options import SideFormat
from kafka_spark.formats.registry.settings import RegistrySettings

ORDER = pa.struct([
    pa.field("id", pa.int64(), nullable=False), ("customer", pa.string()), ("amount", pa.decimal128(12, 2)),
    ("placed", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())), ("address", pa.struct([("street", pa.string())])),
])


def order(i: int) -> dict[str, Any]:
    return {"id": i, "customer": f"c{i}", "amount": decimal.Decimal(f"{i}.{i % 100:02d}"),
            "placed": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i),
            "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=i), "tags": [f"t{j}" for j in range(i % 3)],
            "attrs": [("n", i)], "address": None if i % 2 else {"street": f"{i} Main St"}}


def as_column(values: list[Any], arrow_type: pa.DataType = ORDER) -> pa.Array:
    """The values as a write task sees them: an Arrow column."""
    return pa.array(values, arrow_type)


@pytest.fixture(scope="module")
def server() -> Iterator[RegistryServer]:
    with RegistryServer() as running:
        yield running


@pytest.fixture
def settings_(server: RegistryServer) -> RegistrySettings:
    return RegistrySettings((server.url,), max_retries=0)


@pytest.fixture
def confluent(server: RegistryServer) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": server.url})


@pytest.fixture
def topic() -> str:
    return f"orders-{uuid.uuid4().hex[:8]}"


def side(fmt: str = "avro", write_id: str | None = None, arrow_type: pa.DataType = ORDER,
         settings: dict[str, str] | None = None, **format_fields: Any) -> WriteSide:
    chosen = writer_choice(SideFormat("value", fmt, **format_fields), settings or {})
    return with_derived(chosen, arrow_type, write_id or uuid.uuid4().hex)


def read_back(deserializer: Any, topic: str, framed: list[bytes | None]) -> list[Any]:
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [None if b is None else deserializer(b, ctx) for b in framed]


def test_avro_auto_registers_the_derived_schema_and_confluent_reads_the_values(settings_, confluent, topic):
    values = [order(i) for i in range(5)] + [None]
    framed = encode_side(side(), settings_, as_column(values), topic).to_pylist()
    assert framed[-1] is None  # a tombstone stays one
    registered = confluent.get_latest_version(f"{topic}-value")
    assert json.loads(registered.schema.schema_str)["name"] == "topLevelRecord"
    assert {b[1:5] for b in framed if b is not None} == {registered.schema_id.to_bytes(4, "big")}
    back = read_back(AvroDeserializer(confluent), topic, framed)
    assert back == [{**v, "attrs": dict(v["attrs"])} if v else None for v in values]


def test_registering_again_is_idempotent_and_a_new_write_resolves_again(settings_, confluent, topic):
    first = subject_writer(side(write_id="a"), settings_, topic)
    again = subject_writer(side(write_id="b"), settings_, topic)
    assert first.schema.id == again.schema.id
    assert confluent.get_versions(f"{topic}-value") == [1]


def test_use_latest_version_and_pins_write_with_the_registered_schema(settings_, confluent, topic):
    subject = f"{topic}-value"
    v1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": ""}]}
    id1 = confluent.register_schema(subject, Schema(json.dumps(v1), "AVRO"))
    id2 = confluent.register_schema(subject, Schema(json.dumps(v2), "AVRO"))
    arrow = pa.struct([("id", pa.int64()), ("note", pa.string())])
    column = as_column([{"id": 7, "note": "hi"}], arrow)

    latest = encode_side(side(arrow_type=arrow, settings={"use.latest.version": "true"}), settings_, column,
                         topic).to_pylist()
    assert latest[0] is not None and latest[0][1:5] == id2.to_bytes(4, "big")
    assert read_back(AvroDeserializer(confluent), topic, latest) == [{"id": 7, "note": "hi"}]

    pinned = encode_side(side(arrow_type=pa.struct([("id", pa.int64())]), version=1), settings_,
                         as_column([{"id": 8}], pa.struct([("id", pa.int64())])), topic).to_pylist()
    assert pinned[0] is not None and pinned[0][1:5] == id1.to_bytes(4, "big")
    by_id = encode_side(side(arrow_type=arrow, schema_id=id2), settings_, column, topic).to_pylist()
    assert by_id == latest
    assert confluent.get_versions(subject) == [1, 2]  # nothing registered


def test_a_write_keeps_the_schema_resolved_on_the_driver(settings_, confluent, topic):
    subject = f"{topic}-value"
    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}
    id1 = confluent.register_schema(subject, Schema(json.dumps(v1), "AVRO"))
    arrow = pa.struct([("id", pa.int64())])
    latest = side(arrow_type=arrow, settings={"use.latest.version": "true"})
    assert resolved(latest, settings_, None) == latest  # each row's topic names the subject: resolved in the tasks
    planned = resolved(latest, settings_, topic)
    id2 = confluent.register_schema(subject, Schema(json.dumps(v2), "AVRO"))
    framed = encode_side(planned, settings_, as_column([{"id": 1}], arrow), topic).to_pylist()
    assert framed[0] is not None and framed[0][1:5] == id1.to_bytes(4, "big")
    later = encode_side(side(arrow_type=arrow, settings={"use.latest.version": "true"}), settings_,
                        as_column([{"id": 1}], arrow), topic).to_pylist()
    assert later[0] is not None and later[0][1:5] == id2.to_bytes(4, "big")


def test_without_auto_register_the_derived_schema_must_be_registered(settings_, confluent, topic):
    arrow = pa.struct([pa.field("id", pa.int64(), nullable=False)])
    lookup = side(arrow_type=arrow, settings={"auto.register.schemas": "false"})
    with pytest.raises(ConfigError, match=rf"not registered under subject '{topic}-value'.*auto.register.schemas"):
        subject_writer(lookup, RegistrySettings(settings_.urls, max_retries=0), topic)
    assert lookup.derived is not None
    schema_id = confluent.register_schema(f"{topic}-value", Schema(lookup.derived.schema, "AVRO"))
    assert subject_writer(lookup, settings_, topic).schema.id == schema_id


def test_an_incompatible_derived_schema_is_a_config_error_naming_subject_and_reason(settings_, confluent, topic):
    v1 = {"type": "record", "name": "topLevelRecord", "fields": [{"name": "id", "type": "long"}]}
    confluent.register_schema(f"{topic}-value", Schema(json.dumps(v1), "AVRO"))
    # a new field without a default: records written before cannot be read with it (BACKWARD)
    changed = side(arrow_type=pa.struct([pa.field("id", pa.int64(), False), pa.field("n", pa.int32(), False)]))
    with pytest.raises(ConfigError, match=rf"subject '{topic}-value' as incompatible.*\bn\b"):
        subject_writer(changed, settings_, topic)


def test_the_topic_name_strategy_writes_each_rows_topic_under_its_own_subject(settings_, confluent, topic):
    other = f"{topic}-b"
    framed = encode_side(side(), settings_, as_column([order(1), order(2), order(3)]),
                         [topic, other, topic]).to_pylist()
    ids = [confluent.get_latest_version(f"{t}-value").schema_id for t in (topic, other)]
    assert [b[1:5] for b in framed if b] == [i.to_bytes(4, "big") for i in (ids[0], ids[1], ids[0])]


def test_a_given_subject_or_record_name_strategy_ignores_the_topic(settings_, confluent, topic):
    subject = f"{topic}-fixed"
    encode_side(side(subject=subject), settings_, as_column([order(1)]), "any-topic")
    assert confluent.get_versions(subject) == [1]
    named = side(strategy="TopicRecordNameStrategy", record_name="shop.Order")
    encode_side(named, settings_, as_column([order(1)]), topic)
    schema = confluent.get_latest_version(f"{topic}-shop.Order").schema
    assert json.loads(schema.schema_str)["name"] == "Order"
    assert json.loads(schema.schema_str)["namespace"] == "shop"


def test_a_value_that_does_not_fit_names_its_topic_and_field(settings_, confluent, topic):
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                            {"name": "customer", "type": "string"}]}
    confluent.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))
    latest = side(arrow_type=pa.struct([("id", pa.int64()), ("customer", pa.string())]),
                  settings={"use.latest.version": "true"})
    with pytest.raises(PayloadError, match=rf"topic '{topic}'.*subject '{topic}-value'.*customer"):
        encode_side(latest, settings_, as_column([{"id": 1, "customer": "a"}, {"id": 2, "customer": None}],
                                                 pa.struct([("id", pa.int64()), ("customer", pa.string())])), topic)


def test_protobuf_has_no_derived_schema(settings_):
    with pytest.raises(ConfigError, match=r"Register the \.proto under the subject first.*use\.latest\.version"):
        side("protobuf")
    assert side("protobuf", settings={"use.latest.version": "true"}).derived is None


def test_settings_that_contradict_each_other_are_refused():
    with pytest.raises(ConfigError, match=r"auto\.register\.schemas=true and use\.latest\.version=true"):
        writer_choice(SideFormat("value", "avro"), {"auto.register.schemas": "true", "use.latest.version": "true"})
    with pytest.raises(ConfigError, match="valueSchemaVersion"):
        writer_choice(SideFormat("value", "avro", version=2), {"Auto.Register.Schemas": "TRUE"})
    with pytest.raises(ConfigError, match="must be true or false"):
        writer_choice(SideFormat("value", "avro"), {"use.latest.version": "yes"})
    assert not writer_choice(SideFormat("value", "avro", schema_id=3), {}).auto_register


def test_json_schema_derived_from_a_column_type_and_confluent_reads_the_values(settings_, confluent, topic):
    values = [order(i) for i in range(3)] + [None]
    framed = encode_side(side("json-schema"), settings_, as_column(values), topic).to_pylist()
    registered = confluent.get_latest_version(f"{topic}-value").schema
    assert registered.schema_type == "JSON"
    back = read_back(JSONDeserializer(registered.schema_str, schema_registry_client=confluent), topic, framed)
    expected = [{"id": v["id"], "customer": v["customer"], "amount": float(v["amount"]),
                 "placed": v["placed"].isoformat(), "day": v["day"].isoformat(), "tags": v["tags"],
                 "attrs": dict(v["attrs"]), **({"address": v["address"]} if v["address"] else {})}
                if v else None for v in values]
    assert back == expected


def test_json_schema_for_declares_nullability_and_json_forms():
    schema = json_schema_for(pa.struct([pa.field("a", pa.int32(), False), ("b", pa.binary()),
                                        ("m", pa.map_(pa.string(), pa.float64()))]), "shop.Thing")
    assert schema["title"] == "shop.Thing"
    assert schema["required"] == ["a"]
    assert schema["properties"] == {
        "a": {"type": "integer"}, "b": {"type": ["string", "null"], "contentEncoding": "base64"},
        "m": {"type": ["object", "null"], "additionalProperties": {"type": ["number", "null"]}}}
    with pytest.raises(ConfigError, match="string keys"):
        json_schema_for(pa.map_(pa.int32(), pa.int32()))


def test_an_inline_source_serves_its_schema_and_its_references():
    root = RegisteredSchema("{}", "JSON", (SchemaReference("common.json", "common.json", 1),))
    common = RegisteredSchema('{"type": "string"}', "JSON")
    source = InlineSource(root, ((root.references[0], common),))
    assert source.by_id(123) is root
    assert source.by_reference(SchemaReference("x", "common.json", 1)) is common
    with pytest.raises(ConfigError, match="was not given"):
        source.by_reference(SchemaReference("other.json", "other.json", 1))


@settings(max_examples=25)
@given(st.lists(st.one_of(st.none(), st.fixed_dictionaries({
    "n": st.integers(-(2**63), 2**63 - 1), "s": st.one_of(st.none(), st.text(max_size=20)),
    "f": st.floats(allow_nan=False), "l": st.lists(st.booleans(), max_size=4)})), max_size=8))
def test_any_values_of_the_column_type_round_trip_through_confluents_deserializer(server, values):
    arrow = pa.struct([pa.field("n", pa.int64(), False), ("s", pa.string()), pa.field("f", pa.float64(), False),
                       ("l", pa.list_(pa.bool_()))])
    client = SchemaRegistryClient({"url": server.url})
    framed = encode_side(side(arrow_type=arrow, write_id="fuzz"), RegistrySettings((server.url,)),
                         as_column(values, arrow), "fuzzed").to_pylist()
    assert read_back(AvroDeserializer(client), "fuzzed", framed) == values

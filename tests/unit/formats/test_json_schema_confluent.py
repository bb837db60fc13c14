"""The JSON Schema codec against Confluent's JSONSerializer / JSONDeserializer on an in-memory registry."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry import SchemaReference as ConfluentReference
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from hypothesis import given, settings
from hypothesis import strategies as st
from unit.formats.codec_support import VALUE, ConfluentSource, new_registry

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.json_schema.codec import json_schema_decoder, json_schema_encoder
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.registry.wire import frame, split

ADDRESS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
    "required": ["street"],
}

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "definitions": {"Line": {"type": "object", "properties": {"sku": {"type": "string"},
                                                              "qty": {"type": "integer", "minimum": 1}}}},
    "properties": {
        "id": {"type": "integer"},
        "note": {"type": ["string", "null"]},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "ship_to": {"$ref": "address.json"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "status": {"enum": ["NEW", "SHIPPED"]},
        "priority": {"enum": [1, 2, 3]},
        "created": {"type": "string", "format": "date-time"},
        "coupon": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "payload": {},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["id"],
}

ORDER_VALUE = {
    "id": 7, "note": None, "total": 12.5, "paid": True, "lines": [{"sku": "a", "qty": 2}],
    "ship_to": {"street": "Main St", "zip": 12345}, "labels": {"k": "v"}, "status": "NEW", "priority": 2,
    "created": "2024-01-02T03:04:05Z", "payload": {"free": ["form", 1]}, "either": 3,
}

ORDER_ROW = {
    "id": 7, "note": None, "total": 12.5, "paid": True, "lines": [{"sku": "a", "qty": 2}],
    "ship_to": {"street": "Main St", "zip": 12345}, "labels": [("k", "v")], "status": "NEW", "priority": 2,
    "created": "2024-01-02T03:04:05Z", "coupon": None, "payload": '{"free":["form",1]}', "either": "3",
}


@pytest.fixture
def registry():
    client = new_registry()
    source = ConfluentSource(client)
    client.register_schema("address.json", Schema(json.dumps(ADDRESS), "JSON"))
    order = Schema(json.dumps(ORDER), "JSON", [ConfluentReference("address.json", "address.json", 1)])
    return client, source, order


def write(client, schema, value, validate=True):
    return JSONSerializer(schema, client, conf={"validate": validate})(value, VALUE)


def test_reads_what_confluent_writes(registry):
    client, source, schema = registry
    schema_id, indexes, payload = split(write(client, schema, ORDER_VALUE), protobuf=False)
    reader = source.latest("orders-value")
    decoder = json_schema_decoder(reader, source)
    value = decoder.decode(schema_id, indexes, bytes(payload))
    assert value == ORDER_ROW
    assert decoder.arrow_type == pa.struct([
        ("id", pa.int64()), ("note", pa.string()), ("total", pa.float64()), ("paid", pa.bool_()),
        ("lines", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int64())]))),
        ("ship_to", pa.struct([("street", pa.string()), ("zip", pa.int64())])),
        ("labels", pa.map_(pa.string(), pa.string())), ("status", pa.string()), ("priority", pa.int64()),
        ("created", pa.string()), ("coupon", pa.string()), ("payload", pa.string()), ("either", pa.string()),
    ])
    assert pa.array([value], type=decoder.arrow_type).to_pylist() == [ORDER_ROW]


def test_confluent_reads_what_we_write(registry):
    client, source, schema = registry
    write(client, schema, ORDER_VALUE)
    writer = source.latest("orders-value")
    row = pa.array([ORDER_ROW], type=json_schema_decoder(writer, source).arrow_type).to_pylist()[0]
    indexes, payload = json_schema_encoder(writer, source).encode(row)
    assert indexes == ()
    assert b" " not in payload.replace(b"Main St", b"")  # compact, as Confluent writes
    back = JSONDeserializer(None, schema_registry_client=client)(frame(writer.id, payload), VALUE)
    # absent and null read the same: nulls are left out
    assert back == {k: v for k, v in ORDER_VALUE.items() if v is not None}


def test_payloads_that_do_not_validate_against_the_writer_schema(registry):
    client, source, schema = registry
    bad = {**ORDER_VALUE, "lines": [{"sku": "a", "qty": 0}], "ship_to": {"zip": 1}}
    schema_id, _, payload = split(write(client, schema, bad, validate=False), protobuf=False)
    decoder = json_schema_decoder(source.latest("orders-value"), source)
    with pytest.raises(PayloadError, match=r"schema id \d+ does not validate at \$\.(lines\[0\]\.qty|ship_to)"):
        decoder.decode(schema_id, (), bytes(payload))
    lenient = json_schema_decoder(source.latest("orders-value"), source, {"validate": "false"})
    assert lenient.decode(schema_id, (), bytes(payload))["ship_to"] == {"street": None, "zip": 1}
    wrong_type = json.dumps({"id": 1, "ship_to": {"street": "s", "zip": "12"}}).encode()
    with pytest.raises(PayloadError, match=r"\$\.ship_to\.zip is a string, expected an integer"):
        lenient.decode(schema_id, (), wrong_type)
    with pytest.raises(PayloadError, match=r"does not validate at \$\.ship_to\.zip"):
        decoder.decode(schema_id, (), wrong_type)


def test_encoder_validates_and_names_what_does_not_fit(registry):
    client, source, schema = registry
    write(client, schema, ORDER_VALUE)
    encoder = json_schema_encoder(source.latest("orders-value"), source)
    with pytest.raises(PayloadError, match=r"\$\.lines\[0\]\.qty"):
        encoder.encode({"id": 1, "lines": [{"sku": "a", "qty": 0}]})
    with pytest.raises(PayloadError, match=r"'id' is a required property"):
        encoder.encode({"note": "x"})
    with pytest.raises(PayloadError, match=r"\$\.payload: the column holds JSON text"):
        encoder.encode({"id": 1, "payload": "{not json"})
    with pytest.raises(PayloadError, match=r"\$\.total: nan has no JSON form"):
        encoder.encode({"id": 1, "total": float("nan")})
    unchecked = json_schema_encoder(source.latest("orders-value"), source, {"validate": "false"})
    assert unchecked.encode({"note": "x"}) == ((), b'{"note":"x"}')


def test_unknown_ids_other_formats_and_options(registry):
    client, source, schema = registry
    schema_id, _, payload = split(write(client, schema, ORDER_VALUE), protobuf=False)
    decoder = json_schema_decoder(source.latest("orders-value"), source)
    with pytest.raises(PayloadError, match="schema id 999 is not in the registry"):
        decoder.decode(999, (), bytes(payload))
    avro = source.register("avro-value", RegisteredSchema('"string"', "AVRO"))
    with pytest.raises(PayloadError, match="AVRO, not JSON"):
        decoder.decode(avro.id, (), bytes(payload))
    with pytest.raises(PayloadError, match="not JSON"):
        decoder.decode(schema_id, (), b"{nope")
    with pytest.raises(ConfigError, match="unknown JSON Schema option"):
        json_schema_decoder(source.latest("orders-value"), source, {"emit.default.values": "true"})
    with pytest.raises(ConfigError, match="true or false"):
        json_schema_decoder(source.latest("orders-value"), source, {"validate": "sometimes"})


@pytest.fixture(scope="module")
def fuzz_decoder():
    client = new_registry()
    source = ConfluentSource(client)
    client.register_schema("address.json", Schema(json.dumps(ADDRESS), "JSON"))
    schema = Schema(json.dumps(ORDER), "JSON", [ConfluentReference("address.json", "address.json", 1)])
    schema_id, _, _ = split(write(client, schema, ORDER_VALUE), protobuf=False)
    latest = source.latest("orders-value")
    return schema_id, json_schema_decoder(latest, source), json_schema_decoder(latest, source, {"validate": "false"})


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["id", "lines", "ship_to", "labels", "sku", "qty", "zip", "x"]), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=120)
@given(st.binary(max_size=120) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_random_payloads_give_a_value_or_a_payload_error(fuzz_decoder, data):
    schema_id, *decoders = fuzz_decoder
    for decoder in decoders:
        try:
            value = decoder.decode(schema_id, (), data)
        except PayloadError:
            continue
        pa.array([value], type=decoder.arrow_type)

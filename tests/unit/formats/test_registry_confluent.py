"""The test registry is Confluent-compatible: Confluent's own SchemaRegistryClient and its Avro, Protobuf and
JSON Schema serializers and deserializers talk to it over HTTP (with basic auth, once over TLS), register,
evolve under BACKWARD compatibility and round-trip records; and our client reads what they registered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from harness.certs import self_signed
from harness.schema_registry import RegistryServer

from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.registry.client import SchemaRegistry
from kafka_spark.formats.registry.settings import RegistrySettings
from kafka_spark.formats.registry.wire import frame, split

PASSWORD = "conf-5ecr3t-c4d"
_FIELD = descriptor_pb2.FieldDescriptorProto


def _user(*extra: dict[str, object]) -> str:
    fields = [{"name": "name", "type": "string"}, *extra]
    return json.dumps({"type": "record", "name": "User", "namespace": "shop", "fields": fields})


@pytest.fixture
def server() -> Iterator[RegistryServer]:
    with RegistryServer(users={"alice": PASSWORD}) as running:
        yield running


def _confluent(server: RegistryServer, **more: str) -> SchemaRegistryClient:
    """A new Confluent client (its own empty cache), so every deserializer fetches from the server."""
    return SchemaRegistryClient({"url": server.url, "basic.auth.user.info": f"alice:{PASSWORD}",
                                 "max.retries": 0, **more})


def _ours(server: RegistryServer, **more: object) -> SchemaRegistry:
    return SchemaRegistry(RegistrySettings(urls=(server.url,), username="alice", password=PASSWORD,
                                           max_retries=0, **more))  # type: ignore[arg-type]


def test_avro_round_trip_and_backward_evolution(server: RegistryServer) -> None:
    ctx = SerializationContext("users", MessageField.VALUE)
    first = AvroSerializer(_confluent(server), _user())({"name": "ann"}, ctx)
    assert AvroDeserializer(_confluent(server))(first, ctx) == {"name": "ann"}
    # a field with a default: BACKWARD accepts it, and the new reader fills the default into old data
    with_age = _user({"name": "age", "type": "int", "default": 7})
    second = AvroSerializer(_confluent(server), with_age)({"name": "bob", "age": 41}, ctx)
    assert split(first, False)[0] == 1 and split(second, False)[0] == 2
    reader = AvroDeserializer(_confluent(server), with_age)
    assert (reader(first, ctx), reader(second, ctx)) == ({"name": "ann", "age": 7}, {"name": "bob", "age": 41})
    # a field without a default is refused, and Confluent's client reports the registry's 409
    without_default = _user({"name": "age", "type": "int", "default": 7}, {"name": "city", "type": "string"})
    with pytest.raises(ConfluentError) as caught:
        AvroSerializer(_confluent(server), without_default)({"name": "c", "age": 1, "city": "x"}, ctx)
    assert (caught.value.http_status_code, caught.value.error_code) == (409, 409)
    # our client reads what Confluent's registered, ids and versions alike
    ours = _ours(server)
    assert ours.latest("users-value") == RegisteredSchema(with_age, "AVRO", (), 2, "users-value", 2)
    assert json.loads(ours.by_id(1).schema) == json.loads(_user())
    assert not ours.compatible("users-value", RegisteredSchema(without_default))


def test_avro_over_tls(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with RegistryServer(users={"alice": PASSWORD}, tls=(cert, key)) as server:
        client = _confluent(server, **{"ssl.ca.location": str(cert)})
        ctx = SerializationContext("secure", MessageField.KEY)
        data = AvroSerializer(client, _user())({"name": "tls"}, ctx)
        assert AvroDeserializer(_confluent(server, **{"ssl.ca.location": str(cert)}))(data, ctx) == {"name": "tls"}
        assert _ours(server, ca_location=str(cert)).latest("secure-key").id == 1


def _shop_messages() -> dict[str, type]:
    """shop.Order (importing shop.Money from its own file) with a nested shop.Order.Line, built at run time."""
    common = descriptor_pb2.FileDescriptorProto(name="shop/common.proto", package="shop", syntax="proto3")
    common.message_type.add(name="Money").field.add(name="cents", number=1, type=_FIELD.TYPE_INT64)
    order_file = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3",
                                                    dependency=["shop/common.proto"])
    order = order_file.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=_FIELD.TYPE_STRING)
    order.field.add(name="total", number=2, type=_FIELD.TYPE_MESSAGE, type_name=".shop.Money")
    order.nested_type.add(name="Line").field.add(name="sku", number=1, type=_FIELD.TYPE_STRING)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(order_file)
    return {name: GetMessageClass(pool.FindMessageTypeByName(f"shop.{name}")) for name in ("Order", "Order.Line")}


def test_protobuf_round_trip_with_a_reference_and_a_nested_message(server: RegistryServer) -> None:
    messages = _shop_messages()
    order_ctx, line_ctx = (SerializationContext(t, MessageField.VALUE) for t in ("orders", "lines"))
    order = messages["Order"](id="o-1", total={"cents": 1250})
    data = ProtobufSerializer(messages["Order"], _confluent(server))(order, order_ctx)
    line = messages["Order.Line"](sku="x-9")
    nested = ProtobufSerializer(messages["Order.Line"], _confluent(server))(line, line_ctx)
    # the deserializers fetch the writer schemas (and the imported file) from the server
    assert ProtobufDeserializer(messages["Order"], {}, _confluent(server))(data, order_ctx) == order
    assert ProtobufDeserializer(messages["Order.Line"], {}, _confluent(server))(nested, line_ctx) == line
    schema_id, indexes, payload = split(nested, True)
    assert (indexes, bytes(payload)) == ((0, 0), line.SerializeToString())
    ours = _ours(server)
    registered = ours.by_id(schema_id)
    assert registered.schema_type == "PROTOBUF"
    assert registered.references == (SchemaReference("shop/common.proto", "shop/common.proto", 1),)
    assert ours.by_reference(registered.references[0]).schema_type == "PROTOBUF"
    assert ours.subject_versions(schema_id) == [("lines-value", 1), ("orders-value", 1)]


def test_protobuf_text_schema_serves_confluents_deserializer(server: RegistryServer) -> None:
    text = 'syntax = "proto3";\npackage shop;\nmessage Ping {\n  int64 at = 1;\n  string from = 2;\n}\n'
    schema_id = _ours(server).register("pings-value", RegisteredSchema(text, "PROTOBUF"))
    assert _ours(server).latest("pings-value").schema == text  # as registered
    proto = descriptor_pb2.FileDescriptorProto(name="ping.proto", package="shop", syntax="proto3")
    ping_type = proto.message_type.add(name="Ping")
    ping_type.field.add(name="at", number=1, type=_FIELD.TYPE_INT64)
    ping_type.field.add(name="from", number=2, type=_FIELD.TYPE_STRING)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    ping_class = GetMessageClass(pool.FindMessageTypeByName("shop.Ping"))
    ping = ping_class(at=1_700_000_000, **{"from": "here"})
    data = frame(schema_id, ping.SerializeToString(), (0,))
    # Confluent's deserializer asks for format=serialized: protoc compiles the text into a descriptor
    decoded = ProtobufDeserializer(ping_class, {}, _confluent(server))(
        data, SerializationContext("pings", MessageField.VALUE))
    assert decoded == ping


def test_json_schema_round_trip_and_type_change(server: RegistryServer) -> None:
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    ctx = SerializationContext("events", MessageField.VALUE)
    data = JSONSerializer(schema, _confluent(server))({"n": 3}, ctx)
    assert JSONDeserializer(None, schema_registry_client=_confluent(server))(data, ctx) == {"n": 3}
    registered = _ours(server).by_id(split(data, False)[0])
    assert registered.schema_type == "JSON" and json.loads(registered.schema) == json.loads(schema)
    client = _confluent(server)
    wider = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "string"}}})
    assert client.register_schema("events-value", Schema(wider, "JSON")) == 2  # JSON contents are not checked
    with pytest.raises(ConfluentError) as caught:
        client.register_schema("events-value", Schema(_user(), "AVRO"))
    assert caught.value.http_status_code == 409
    with pytest.raises(ConfluentError) as caught:
        client.register_schema("bad-json", Schema('{"type": 12}', "JSON"))
    assert caught.value.error_code == 42201


def test_subjects_versions_deletes_config_and_mode(server: RegistryServer) -> None:
    client = _confluent(server)
    assert sorted(client.get_schema_types()) == ["AVRO", "JSON", "PROTOBUF"]
    first = client.register_schema("users-value", Schema(_user(), "AVRO"))
    assert client.lookup_schema("users-value", Schema(_user(), "AVRO")).version == 1
    assert client.get_compatibility() == "BACKWARD"
    client.set_compatibility("users-value", "NONE")
    assert client.get_compatibility("users-value") == "NONE"
    # NONE lets an incompatible change in
    second = client.register_schema("users-value", Schema(_user({"name": "city", "type": "string"}), "AVRO"))
    assert client.get_versions("users-value") == [1, 2]
    assert client.get_version("users-value", 1).schema_id == first
    assert client.get_schema_versions(second)[0].version == 2  # type: ignore[union-attr]
    assert client.delete_version("users-value", 2) == 2
    assert client.get_versions("users-value") == [1]
    assert client.get_latest_version("users-value").schema_id == first
    assert client.delete_subject("users-value") == [1]
    assert client.get_subjects() == []
    with pytest.raises(ConfluentError) as caught:
        client.get_versions("users-value")
    assert caught.value.error_code == 40401
    assert client.delete_subject("users-value", permanent=True) == [1, 2]
    with pytest.raises(ConfluentError) as caught:
        client.get_schema(99)
    assert (caught.value.http_status_code, caught.value.error_code) == (404, 40403)
    client.update_global_mode("READONLY")
    with pytest.raises(ConfluentError) as caught:
        client.register_schema("other-value", Schema(_user(), "AVRO"))
    assert caught.value.error_code == 42205
    assert client.get_global_mode() == "READONLY"


def test_wrong_password_is_refused_to_confluent_too(server: RegistryServer) -> None:
    client = SchemaRegistryClient({"url": server.url, "basic.auth.user.info": "alice:nope", "max.retries": 0})
    with pytest.raises(ConfluentError) as caught:
        client.get_subjects()
    assert (caught.value.http_status_code, caught.value.error_code) == (401, 40101)

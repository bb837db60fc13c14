"""Confluent's framing: split and frame agree with the bytes Confluent's own serializers write, and any bytes
give a result or a PayloadError naming the reason, in bounded memory."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_spark.errors import PayloadError
from kafka_spark.formats.registry.wire import frame, split

FUZZ = settings(max_examples=300, deadline=None)


def _messages() -> dict[str, type]:
    """Message classes of one .proto file: two top-level messages, one with a nested one inside a nested one."""
    proto = descriptor_pb2.FileDescriptorProto(name="wire/test.proto", package="wire", syntax="proto3")
    first = proto.message_type.add(name="First")
    first.field.add(name="a", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64)
    second = proto.message_type.add(name="Second")
    second.field.add(name="b", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    second.nested_type.add(name="Skipped")
    inner = second.nested_type.add(name="Inner")
    inner.field.add(name="c", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_BOOL)
    inner.nested_type.add(name="Deep").field.add(name="d", number=1,
                                                  type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    names = ("wire.First", "wire.Second", "wire.Second.Inner", "wire.Second.Inner.Deep")
    return {n: GetMessageClass(pool.FindMessageTypeByName(n)) for n in names}


@pytest.fixture(scope="module")
def confluent() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": "mock://wire-tests"})


@pytest.mark.parametrize(("name", "indexes"), [("wire.First", (0,)), ("wire.Second", (1,)),
                                               ("wire.Second.Inner", (1, 1)), ("wire.Second.Inner.Deep", (1, 1, 0))])
def test_protobuf_indexes_as_confluent_writes_them(confluent: SchemaRegistryClient, name: str,
                                                   indexes: tuple[int, ...]) -> None:
    cls = _messages()[name]
    message = cls()
    field = message.DESCRIPTOR.fields[0]
    setattr(message, field.name, {"a": 7, "b": "x", "c": True, "d": -3}[field.name])
    data = ProtobufSerializer(cls, confluent)(message, SerializationContext(f"t-{name}", MessageField.VALUE))
    schema_id, found, payload = split(data, protobuf=True)
    assert (found, bytes(payload)) == (indexes, message.SerializeToString())
    assert schema_id == confluent.get_latest_version(f"t-{name}-value").schema_id
    # our framing of the same payload is byte for byte Confluent's, the single 0x00 for [0] included
    assert frame(schema_id, message.SerializeToString(), indexes) == data


def test_avro_and_json_framing_as_confluent_writes_it(confluent: SchemaRegistryClient) -> None:
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]})
    data = AvroSerializer(confluent, avro)({"n": 300}, SerializationContext("wire-avro", MessageField.VALUE))
    schema_id, indexes, payload = split(data, protobuf=False)
    assert (indexes, bytes(payload), data[:1]) == ((), b"\xd8\x04", b"\x00")
    assert frame(schema_id, b"\xd8\x04") == data
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    data = JSONSerializer(schema, confluent)({"n": 5}, SerializationContext("wire-json", MessageField.VALUE))
    schema_id, indexes, payload = split(memoryview(data), protobuf=False)
    assert json.loads(bytes(payload)) == {"n": 5} and indexes == ()
    assert frame(schema_id, bytes(payload)) == data


def test_split_reads_ids_and_index_forms() -> None:
    assert split(b"\x00\x7f\xff\xff\xffabc", False)[0] == 2**31 - 1
    assert split(b"\x00\x00\x00\x00\x00", False)[0] == 0
    assert bytes(split(b"\x00\x00\x00\x00\x05", False)[2]) == b""
    # [0] in its short and long form, and count 0 (Confluent reads it as [0])
    for data in (b"\x00\x00\x00\x00\x09\x00pb", b"\x00\x00\x00\x00\x09\x02\x00pb"):
        assert split(data, True)[1:] == ((0,), memoryview(b"pb"))
    assert split(b"\x00\x00\x00\x00\x09\x04\x02\x80\x01pb", True)[1] == (1, 64)
    assert bytes(split(b"\x00\x00\x00\x00\x09\x04\x02\x80\x01pb", True)[2]) == b"pb"
    assert frame(9, b"pb", (1, 64)) == b"\x00\x00\x00\x00\x09\x04\x02\x80\x01pb"
    assert frame(9, b"pb", ()) == b"\x00\x00\x00\x00\x09\x00pb"


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "empty payload"),
    (b"\x00\x00\x01", "shorter than Confluent's 5-byte framing"),
    (b"\x01" + bytes(16) + b"x", "0x01 is Confluent's schema-GUID framing"),
    (b"\x7f\x00\x00\x00\x01x", "magic byte 0x7f"),
    (b"\x00\xff\xff\xff\xfex", "negative schema id -2"),
    (b"\x00\x00\x00\x00\x01", "ends before its message indexes"),
    (b"\x00\x00\x00\x00\x01\x01", "negative message index count -1"),
    (b"\x00\x00\x00\x00\x01\x02\x80", "truncated message index"),
    (b"\x00\x00\x00\x00\x01\x02\x03", "negative message index -2"),
    (b"\x00\x00\x00\x00\x01\x80\x80", "truncated message index count"),
    (b"\x00\x00\x00\x00\x01\x02\xff\xff\xff\xff\xff\x01", "longer than 5 bytes"),
    (b"\x00\x00\x00\x00\x01\x02\xff\xff\xff\xff\x1f", "beyond 32 bits"),
    # a count of a billion indexes with three bytes left: refused before any work
    (b"\x00\x00\x00\x00\x01\x80\xa8\xd6\xb9\x07\x02\x02\x02", "exceeds the 3 bytes left"),
])
def test_bad_framing_says_why(data: bytes, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason.replace("(", r"\(")):
        split(data, protobuf=True)


def test_frame_refuses_ids_outside_the_wire_range() -> None:
    with pytest.raises(ValueError, match="schema id"):
        frame(-1, b"")
    with pytest.raises(ValueError, match="message index"):
        frame(1, b"", (1, -1))


@FUZZ
@given(st.binary(max_size=40), st.booleans())
def test_any_bytes_split_or_fail_cleanly(data: bytes, protobuf: bool) -> None:
    try:
        schema_id, indexes, payload = split(data, protobuf)
    except PayloadError:
        return
    assert schema_id >= 0 and all(i >= 0 for i in indexes)
    assert (indexes != ()) == protobuf
    # what split accepts, frame writes back and split reads again the same
    again = split(frame(schema_id, bytes(payload), indexes if protobuf else None), protobuf)
    assert again[:2] == (schema_id, indexes) and again[2] == payload


@FUZZ
@given(st.integers(0, 2**31 - 1), st.none() | st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6),
       st.binary(max_size=30))
def test_frame_then_split_round_trips(schema_id: int, indexes: list[int] | None, payload: bytes) -> None:
    framed = frame(schema_id, payload, None if indexes is None else tuple(indexes))
    found = split(framed, indexes is not None)
    assert found[0] == schema_id and bytes(found[2]) == payload
    assert found[1] == (() if indexes is None else tuple(indexes))


def test_hostile_count_allocates_nothing_big() -> None:
    data = b"\x00\x00\x00\x00\x01" + b"\xfe\xff\xff\xff\x0f" + b"\x02" * 100
    tracemalloc.start()
    try:
        with pytest.raises(PayloadError):
            split(data, True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024

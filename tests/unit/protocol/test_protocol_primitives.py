"""Primitives, tagged fields, nullable structs, encode errors and the consumer protocol payloads."""

from __future__ import annotations

import random
import uuid
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka_python_oracle import build
from protocol_values import random_value

from kafka_spark.errors import DecodeError
from kafka_spark.protocol import (
    UNKNOWN_TAGS,
    EncodeError,
    decode_assignment,
    decode_body,
    decode_subscription,
    encode_assignment,
    encode_body,
    encode_request,
    encode_subscription,
)
from kafka_spark.protocol.compiler import compile_struct
from kafka_spark.protocol.primitives import read_uvarint
from kafka_spark.protocol.schema import A, F, S, parse_versions
from kafka_spark.protocol.schemas.consumer_protocol import ASSIGNMENT, SUBSCRIPTION
from kafka_spark.protocol.varint import (
    decode_varint,
    decode_varlong,
    encode_uvarint,
    encode_varint,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription


def _round(fields, version: int, flexible: bool, value: dict) -> tuple[bytes, dict]:
    plan = compile_struct(fields, version, flexible)
    out = bytearray()
    plan.encode(out, value)
    decoded, pos = plan.decode(memoryview(bytes(out)), 0)
    assert pos == len(out)
    return bytes(out), decoded


@given(st.integers(0, 2**32 - 1))
def test_uvarint(value: int) -> None:
    data = encode_uvarint(value)
    assert read_uvarint(memoryview(data), 0) == (value, len(data))


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_zigzag(small: int, big: int) -> None:
    assert decode_varint(encode_varint(small), 0)[0] == small
    assert decode_varlong(encode_varint(big), 0)[0] == big


def test_uvarint_limits() -> None:
    with pytest.raises(DecodeError):
        read_uvarint(memoryview(b"\xff\xff\xff\xff\xff\x01"), 0)
    with pytest.raises(DecodeError):
        read_uvarint(memoryview(b"\x80\x80"), 0)


def test_version_ranges() -> None:
    assert 5 in parse_versions("3+") and 2 not in parse_versions("3+")
    assert parse_versions("0-7") == (0, 7) and parse_versions("4") == (4, 4)
    assert parse_versions("none").empty and str(parse_versions("2-5")) == "2-5"


def test_classic_and_compact_strings() -> None:
    fields = (F("s", "string"), F("n", "string", nullable="0+"), F("b", "bytes", nullable="0+"))
    data, _ = _round(fields, 0, False, {"s": "ab", "n": None, "b": None})
    assert data == bytes.fromhex("0002 6162 ffff ffffffff")
    data, decoded = _round(fields, 0, True, {"s": "ab", "n": None, "b": b"\x01"})
    assert data == bytes.fromhex("03 6162 00 02 01 00")
    assert decoded == {"s": "ab", "n": None, "b": b"\x01"}


def test_invalid_utf8_is_replaced_like_the_java_client() -> None:
    plan = compile_struct((F("s", "string"),), 0, False)
    value, _ = plan.decode(memoryview(b"\x00\x02\xff\x41"), 0)
    assert value == {"s": "\ufffdA"}


def test_tagged_fields_are_written_only_when_not_default() -> None:
    fields = (
        F("a", "int32"),
        F("t", "string", nullable="0+", default=None, tag=3),
        S("st", "0+", [F("x", "int32", default=-1)], tag=1),
    )
    data, decoded = _round(fields, 0, True, {"a": 1, "t": None, "st": {"x": -1}})
    assert data == bytes.fromhex("00000001 00")
    assert decoded == {"a": 1, "t": None, "st": {"x": -1}}
    # tags go out in ascending order whatever the declaration order
    data, decoded = _round(fields, 0, True, {"a": 1, "t": "z", "st": {"x": 2}})
    assert data == bytes.fromhex("00000001 02" "01 05 00000002 00" "03 02 027a")
    assert decoded["st"] == {"x": 2} and decoded["t"] == "z"


def test_unknown_tags_survive_a_round_trip() -> None:
    fields = (F("a", "int8"),)
    data, decoded = _round(fields, 0, True, {"a": 1, UNKNOWN_TAGS: {7: b"xyz"}})
    assert data == bytes.fromhex("01 01 07 03 78797a")
    assert decoded == {"a": 1, UNKNOWN_TAGS: {7: b"xyz"}}


def test_tagged_field_must_fill_its_declared_size() -> None:
    plan = compile_struct((F("t", "int32", tag=0),), 0, True)
    with pytest.raises(DecodeError, match="declares"):
        plan.decode(memoryview(bytes.fromhex("01 00 05 0000000100")), 0)


def test_nullable_struct_marker() -> None:
    fields = (S("s", "0+", [F("x", "int16")], nullable="0+"),)
    assert _round(fields, 0, False, {"s": None}) == (b"\xff", {"s": None})
    assert _round(fields, 0, False, {"s": {"x": 5}}) == (b"\x01\x00\x05", {"s": {"x": 5}})


def test_fields_outside_the_version_decode_as_defaults() -> None:
    fields = (F("old", "int32", "0-1", default=-1), A("new", "2+", [F("x", "int8")]), F("keep", "int8"))
    _, decoded = _round(fields, 0, False, {"old": 4, "new": [{"x": 1}], "keep": 1})
    assert decoded == {"old": 4, "new": [], "keep": 1}
    _, decoded = _round(fields, 2, False, {"old": 4, "new": [{"x": 1}], "keep": 1})
    assert decoded == {"old": -1, "new": [{"x": 1}], "keep": 1}


def test_decoded_defaults_are_not_shared() -> None:
    a = decode_body(3, 0, "response", bytes(8))
    b = decode_body(3, 0, "response", bytes(8))
    assert a == b and a["brokers"] is not b["brokers"]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"group_id": None}, "non-nullable"),
        ({"group_id": 5}, "expected str"),
        ({"group_id": "g", "generation_id": 2**31}, "generation_id"),
        ({"group_id": "x" * 40000}, "int16 length"),
    ],
)
def test_encode_errors_are_typed(body: dict, match: str) -> None:
    with pytest.raises(EncodeError, match=match):
        encode_request(12, 0, 1, "c", body)


def test_encode_rejects_wrong_shapes() -> None:
    with pytest.raises(EncodeError):
        encode_body(3, 1, "request", {"topics": "abc"})
    with pytest.raises(EncodeError):
        encode_body(3, 1, "request", {"topics": [5]})
    with pytest.raises(EncodeError):
        encode_body(1, 13, "request", {"topics": [{"topic_id": b"short"}]})


@pytest.mark.parametrize("version", range(4))
def test_consumer_protocol_matches_kafka_python(version: int) -> None:
    rng = random.Random(version)
    for _ in range(10):
        sub = random_value(SUBSCRIPTION.fields, version, False, rng)
        data = encode_subscription(sub, version)
        theirs = build(ConsumerProtocolSubscription._struct, SUBSCRIPTION.fields, sub, version)
        assert data == bytes(theirs.encode(version=version))
        assert decode_subscription(data) == (version, sub)

        assignment = random_value(ASSIGNMENT.fields, version, False, rng)
        data = encode_assignment(assignment, version)
        theirs = build(ConsumerProtocolAssignment._struct, ASSIGNMENT.fields, assignment, version)
        assert data == bytes(theirs.encode(version=version))
        assert decode_assignment(data) == (version, assignment)


def test_consumer_protocol_reads_newer_versions() -> None:
    sub = {"topics": ["t"], "user_data": None, "owned_partitions": [], "generation_id": 3, "rack_id": "r"}
    data = bytearray(encode_subscription(sub, 3))
    data[0:2] = b"\x00\x07"  # a future version that appended more fields
    assert decode_subscription(bytes(data) + b"future") == (7, sub)
    with pytest.raises(DecodeError):
        decode_subscription(b"\xff\xff")
    with pytest.raises(DecodeError):
        decode_assignment(b"")


def test_uuid_values() -> None:
    topic_id = uuid.uuid4()
    body = {"topics": [{"topic_id": topic_id, "name": None}]}
    assert decode_body(3, 12, "request", encode_body(3, 12, "request", body))["topics"][0]["topic_id"] == topic_id
    raw = encode_body(3, 12, "request", {"topics": [{"topic_id": topic_id.bytes, "name": None}]})
    assert raw == encode_body(3, 12, "request", body)

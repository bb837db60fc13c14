"""Random proto3 messages of a schema holding every type, map key and well-known type the Spark mapping reads, and
the ways a payload can stray from the canonical encoding: for the column-wise path's parity tests and its fuzz
target (tests/fuzz/columnar_targets.py)."""

from __future__ import annotations

import random
import struct
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.protobuf.codec import ProtobufDecoder, protobuf_decoder

PROTO = """
syntax = "proto3";
package col;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";

message Leaf { string name = 1; sint64 n = 2; repeated fixed32 xs = 3; }
message Nothing {}
message OnlyNothing { Nothing n = 1; }

message Row {
  enum Color { option allow_alias = true; RED = 0; GREEN = 1; VERT = 1; BLUE = 2; }
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; uint32 u32 = 4; fixed32 f32 = 5;
  int64 i64 = 6; sint64 s64 = 7; sfixed64 sf64 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes by = 15; Color color = 16;
  repeated int32 ri32 = 17; repeated uint64 ru64 = 18; repeated double rdb = 19; repeated string rs = 20;
  repeated bytes rby = 21; repeated Color rcolor = 22; repeated bool rb = 23; repeated float rfl = 24;
  Leaf leaf = 25; repeated Leaf leaves = 26;
  map<string, int32> m_si = 27; map<uint32, Leaf> m_ul = 28; map<bool, Color> m_bc = 29;
  map<int64, string> m_ls = 30; map<uint64, bytes> m_ub = 31; map<sint32, google.protobuf.Timestamp> m_st = 32;
  map<fixed64, google.protobuf.Int32Value> m_fw = 33;
  google.protobuf.Timestamp ts = 34; google.protobuf.Duration du = 35; repeated google.protobuf.Timestamp rts = 36;
  google.protobuf.Int32Value w_i32 = 37; google.protobuf.UInt32Value w_u32 = 38;
  google.protobuf.Int64Value w_i64 = 39; google.protobuf.UInt64Value w_u64 = 40;
  google.protobuf.StringValue w_s = 41; google.protobuf.BytesValue w_by = 42; google.protobuf.BoolValue w_b = 43;
  google.protobuf.FloatValue w_f = 44; google.protobuf.DoubleValue w_d = 45;
  repeated google.protobuf.Int64Value rw = 46;
  google.protobuf.Any any = 47; google.protobuf.Empty empty = 48; Nothing nothing = 49; OnlyNothing only = 50;
  repeated Nothing nothings = 51;
  oneof choice { string text = 52; Leaf pick = 53; int64 num = 54; }
  optional int32 opt = 55; optional double optd = 56; optional Color optc = 57;
}
"""
MESSAGE = "col.Row"
OPTION_SETS: list[dict[str, str]] = [
    {},
    {"emit.default.values": "true"},
    {"enums.as.ints": "true", "upcast.unsigned.ints": "true"},
    {"unwrap.primitive.wrapper.types": "true"},
    {"unwrap.primitive.wrapper.types": "true", "emit.default.values": "true", "retain.empty.message.types": "true"},
    {"retain.empty.message.types": "true", "enums.as.ints": "true"},
]
MUTATIONS = ("none", "none", "none", "none", "none", "none", "truncate", "append", "flip", "merge", "unknown",
             "wire-type", "map-twice")

_SCHEMA = RegisteredSchema(PROTO, "PROTOBUF", id=1)
_INT32 = (0, 1, -1, 127, 128, 2**31 - 1, -(2**31))
_INT64 = (0, 1, -1, 2**53 + 1, 2**63 - 1, -(2**63))
_UINT32 = (0, 1, 2**31, 2**32 - 1)
_UINT64 = (0, 1, 2**63, 2**64 - 1)
_FLOATS = (0.0, -0.0, 1.5, -2.25, 1e30, float("inf"), float("-inf"), float("nan"), 3.4028234663852886e38)
_TEXT = ("", "a", "é", "日本", "😀", "x" * 40, "\u0000")


def decoder(options: dict[str, str] | None = None) -> ProtobufDecoder:
    """A decoder of col.Row (registered as id 1) with `from_protobuf` options."""
    return protobuf_decoder(_SCHEMA, InlineSource(_SCHEMA), options, MESSAGE)


def message(cls: Any, rng: random.Random, depth: int = 0) -> Any:
    """A message of class `cls` with random fields set (zero values and extremes among them)."""
    msg = cls()
    for field in cls.DESCRIPTOR.fields:
        if rng.random() < 0.45:
            continue
        if field.containing_oneof is not None and msg.WhichOneof(field.containing_oneof.name) is not None:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            _fill_map(getattr(msg, field.name), field.message_type, rng, depth)
        elif field.is_repeated:
            container = getattr(msg, field.name)
            for _ in range(rng.randint(0, 4)):
                if field.message_type is not None:
                    container.add().CopyFrom(_sub(field.message_type, rng, depth))
                else:
                    container.append(_scalar(field, rng))
        elif field.message_type is not None:
            getattr(msg, field.name).CopyFrom(_sub(field.message_type, rng, depth))
        else:
            setattr(msg, field.name, _scalar(field, rng))
    return msg


def _sub(descriptor: Any, rng: random.Random, depth: int) -> Any:
    from google.protobuf import message_factory

    cls = message_factory.GetMessageClass(descriptor)
    name = descriptor.full_name
    if name == "google.protobuf.Timestamp":
        nanos = rng.choice((0, 1000, 999_999_000, rng.randrange(10**9), 500))
        seconds = rng.choice((0, 1, -1, 1_700_000_000, -9_000_000_000, 9_000_000_000, 5, -5))
        if rng.random() < 0.03:  # beyond what 64 bits of nanoseconds hold (1677-2262): per record
            seconds = rng.choice((-62_135_596_800, 253_402_300_799))
        return cls(seconds=seconds, nanos=nanos)
    if name == "google.protobuf.Duration":
        seconds = rng.choice((0, 5, -5, 86_400, -9_000_000_000, 315_576_000_000 if rng.random() < 0.1 else 1))
        nanos = rng.choice((0, 1000, 999_999_000, 7))
        return cls(seconds=seconds, nanos=-nanos if seconds < 0 else nanos)
    if name.startswith("google.protobuf.") and name.endswith("Value"):
        # mostly a value other than zero: a wrapper holding zero is written back longer by ptars (per record)
        value = descriptor.fields_by_name["value"]
        return cls(value=_nonzero(value, rng)) if rng.random() < 0.9 else cls()
    if name == "google.protobuf.Any":
        return cls(type_url=rng.choice(("", "type.googleapis.com/col.Leaf")), value=rng.choice((b"", b"\x08\x01")))
    return message(cls, rng, depth + 1) if depth < 3 else cls()


def _scalar(field: Any, rng: random.Random) -> Any:
    t = field.type
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return rng.choice(_INT32)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice(_UINT32)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return rng.choice(_INT64)
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice(_UINT64)
    if t == FieldDescriptor.TYPE_FLOAT:
        return struct.unpack("<f", struct.pack("<f", rng.choice(_FLOATS[:-1])))[0]
    if t == FieldDescriptor.TYPE_DOUBLE:
        return rng.choice(_FLOATS)
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_STRING:
        return rng.choice(_TEXT)
    if t == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.choice((0, 1, 5)))
    if t == FieldDescriptor.TYPE_ENUM:
        return rng.choice((0, 1, 2, 7, -3))
    raise AssertionError(t)


def _fill_map(container: Any, entry: Any, rng: random.Random, depth: int) -> None:
    # mostly keys and values other than zero: upb writes a zero key or value out, ptars leaves it out, so such
    # entries go per record
    key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
    for _ in range(rng.randint(0, 3)):
        k = _nonzero(key, rng) if rng.random() < 0.9 else _scalar(key, rng)
        if value.message_type is not None:
            container[k].CopyFrom(_sub(value.message_type, rng, depth))
        else:
            container[k] = _nonzero(value, rng) if rng.random() < 0.9 else _scalar(value, rng)


def _nonzero(field: Any, rng: random.Random) -> Any:
    while True:
        value = _scalar(field, rng)
        if value or (isinstance(value, float) and str(value) == "-0.0"):
            return value


def mutate(payload: bytes, other: bytes, how: str, rng: random.Random) -> bytes:
    """`payload` changed as `how` says (MUTATIONS); `other` is a second payload of the same message."""
    if how == "truncate":
        return payload[:rng.randrange(len(payload))] if payload else b"\x08"
    if how == "append":
        return payload + rng.randbytes(rng.randint(1, 4))
    if how == "flip" and payload:
        at = rng.randrange(len(payload))
        return payload[:at] + bytes([payload[at] ^ (1 << rng.randrange(8))]) + payload[at + 1:]
    if how == "merge":
        return payload + other
    if how == "unknown":
        return payload + b"\xc0\x3e\x01"  # field 1000, varint 1
    if how == "wire-type":
        # i32 as bytes, ts as a varint, the map m_si as a varint
        return payload + rng.choice((b"\x0a\x01a", b"\x90\x02\x01", b"\xd8\x01\x01"))
    if how == "map-twice":
        entry = b"\x0a\x01k\x10" + bytes([rng.randrange(1, 100)])
        return payload + b"\xda\x01" + bytes([len(entry)]) + entry  # m_si["k"] = ..., after any other "k"
    return payload

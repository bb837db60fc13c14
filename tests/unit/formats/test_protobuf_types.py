"""Spark's `from_protobuf` mapping: every Protobuf type's Arrow type and value, and every option Spark
documents (payloads written by protobuf's own message classes)."""

from __future__ import annotations

import decimal
import json

import pyarrow as pa
import pytest
from unit.formats.codec_support import ConfluentSource, compile_protos, message_class, new_registry

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.protobuf.codec import protobuf_decoder
from kafka_spark.formats.protobuf.schema import message_indexes
from kafka_spark.formats.protobuf.values import OPTION_DEFAULTS, protobuf_options

SCALARS = """
syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";

message Customer { string name = 1; int32 tier = 2; }
message Nothing {}

message All {
  enum Color { RED = 0; GREEN = 1; }
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; uint32 u32 = 4; fixed32 f32 = 5;
  int64 i64 = 6; sint64 s64 = 7; sfixed64 sf64 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes by = 15; Color color = 16;
  repeated Color colors = 17; map<bool, Color> flags = 18; map<uint32, Customer> by_id = 19;
  google.protobuf.Timestamp ts = 20; google.protobuf.Duration du = 21;
  google.protobuf.Int32Value w32 = 22; google.protobuf.UInt32Value wu32 = 23;
  google.protobuf.UInt64Value wu64 = 24; google.protobuf.BytesValue wby = 25;
  google.protobuf.Any any = 26; google.protobuf.Empty empty = 27; Nothing nothing = 28;
  repeated Nothing nothings = 29; optional int32 opt = 30; repeated google.protobuf.Timestamp tss = 31;
}
"""

PROTO2 = """
syntax = "proto2";
package p2;
message Legacy {
  required int32 id = 1;
  optional string name = 2 [default = "anon"];
  optional int32 count = 3;
  optional Kind kind = 4 [default = B];
  enum Kind { A = 1; B = 2; }
  repeated int32 xs = 5;
}
"""

RECURSIVE = """
syntax = "proto3";
package r;
message Person { string name = 1; Person bff = 2; repeated Person friends = 3; }
"""


@pytest.fixture(scope="module")
def env():
    source = ConfluentSource(new_registry())
    files = {"t/all.proto": SCALARS, "p2/legacy.proto": PROTO2, "r/person.proto": RECURSIVE}
    pool = compile_protos(files)
    schemas = {name: source.register(name, RegisteredSchema(text, "PROTOBUF")) for name, text in files.items()}
    return source, pool, schemas


def decoder(env, file, message, options=None):
    source, _, schemas = env
    return protobuf_decoder(schemas[file], source, options, message)


def decode(env, file, message, msg, options=None):
    dec = decoder(env, file, message, options)
    value = dec.decode(env[2][file].id, message_indexes(msg.DESCRIPTOR), msg.SerializeToString())
    pa.array([value], type=dec.arrow_type)  # every value builds its column
    return value


def test_arrow_types_by_default(env):
    t = decoder(env, "t/all.proto", "t.All").arrow_type
    customer = pa.struct([("name", pa.string()), ("tier", pa.int32())])
    assert t == pa.struct([
        ("i32", pa.int32()), ("s32", pa.int32()), ("sf32", pa.int32()), ("u32", pa.int32()), ("f32", pa.int32()),
        ("i64", pa.int64()), ("s64", pa.int64()), ("sf64", pa.int64()), ("u64", pa.int64()), ("f64", pa.int64()),
        ("fl", pa.float32()), ("db", pa.float64()), ("b", pa.bool_()), ("s", pa.string()), ("by", pa.binary()),
        ("color", pa.string()), ("colors", pa.list_(pa.string())), ("flags", pa.map_(pa.bool_(), pa.string())),
        ("by_id", pa.map_(pa.int32(), customer)), ("ts", pa.timestamp("us", tz="UTC")), ("du", pa.duration("us")),
        ("w32", pa.struct([("value", pa.int32())])), ("wu32", pa.struct([("value", pa.int32())])),
        ("wu64", pa.struct([("value", pa.int64())])), ("wby", pa.struct([("value", pa.binary())])),
        ("any", pa.struct([("type_url", pa.string()), ("value", pa.binary())])),
        # google.protobuf.Empty, an empty message and a list of them: Spark drops them
        ("opt", pa.int32()), ("tss", pa.list_(pa.timestamp("us", tz="UTC"))),
    ])
    assert all(field.nullable for field in t)


def test_arrow_types_with_every_option(env):
    options = {"upcast.unsigned.ints": "true", "enums.as.ints": "true", "unwrap.primitive.wrapper.types": "true",
               "convert.any.fields.to.json": "true", "retain.empty.message.types": "true"}
    t = decoder(env, "t/all.proto", "t.All", options).arrow_type
    dummy = pa.struct([("__dummy_field_in_empty_struct", pa.string())])
    got = {f.name: f.type for f in t}
    assert got["u32"] == pa.int64() and got["f32"] == pa.int32()  # only uint32 widens, not fixed32
    assert got["u64"] == pa.decimal128(20, 0) and got["f64"] == pa.int64()
    assert got["color"] == pa.int32() and got["colors"] == pa.list_(pa.int32())
    assert got["flags"] == pa.map_(pa.bool_(), pa.int32())
    assert got["by_id"] == pa.map_(pa.int64(), pa.struct([("name", pa.string()), ("tier", pa.int32())]))
    assert (got["w32"], got["wu32"], got["wu64"], got["wby"]) == (pa.int32(), pa.int64(), pa.decimal128(20, 0),
                                                                  pa.binary())
    assert got["any"] == pa.string()
    assert (got["empty"], got["nothing"], got["nothings"]) == (dummy, dummy, pa.list_(dummy))


def all_message(env):
    cls = message_class(env[1], "t.All")
    msg = cls(u32=2**32 - 1, f32=2**32 - 2, u64=2**64 - 1, f64=2**63, color=1, colors=[0, 1, 7], fl=-0.0)
    msg.flags[True] = 1
    msg.by_id[2**31].name = "big"
    msg.ts.seconds, msg.ts.nanos = -1, 999_999_999
    msg.du.seconds, msg.du.nanos = 0, -1_999
    msg.w32.value = 0
    msg.wu32.value = 2**32 - 1
    msg.wu64.SetInParent()
    customer = message_class(env[1], "t.Customer")(name="ann", tier=2)
    msg.any.type_url, msg.any.value = "type.googleapis.com/t.Customer", customer.SerializeToString()
    msg.empty.SetInParent()
    msg.nothing.SetInParent()
    msg.tss.add(seconds=1)
    return msg


def test_values_by_default(env):
    value = decode(env, "t/all.proto", "t.All", all_message(env))
    assert value["u32"] == -1 and value["f32"] == -2  # the unsigned bits in a signed int, as Spark reads them
    assert value["u64"] == -1 and value["f64"] == -(2**63)
    assert value["color"] == "GREEN"
    assert value["colors"] == ["RED", "GREEN", "UNKNOWN_ENUM_VALUE_Color_7"]  # repeated zeros are kept
    assert value["flags"] == [(True, "GREEN")]
    assert value["by_id"] == [(-(2**31), {"name": "big", "tier": None})]
    assert value["fl"] == 0.0 and str(value["fl"]) == "-0.0"  # -0.0 is on the wire, unlike 0.0
    assert value["ts"] == -1  # -1 s + 999999999 ns, truncated to microseconds
    assert value["du"] == -1  # -1999 ns truncates towards zero
    assert value["w32"] == {"value": None}  # a wrapper holding 0: Spark reads the unset proto3 scalar as null
    assert value["wu32"] == {"value": -1} and value["wu64"] == {"value": None}
    assert value["wby"] is None
    assert value["any"]["type_url"] == "type.googleapis.com/t.Customer"
    assert value["tss"] == [1_000_000]
    unset = {k: v for k, v in value.items() if v is None}
    assert set(unset) == {"i32", "s32", "sf32", "i64", "s64", "sf64", "db", "b", "s", "by", "wby", "opt"}


def test_values_with_every_option(env):
    options = {"upcast.unsigned.ints": "true", "enums.as.ints": "true", "unwrap.primitive.wrapper.types": "true",
               "convert.any.fields.to.json": "true", "retain.empty.message.types": "true"}
    value = decode(env, "t/all.proto", "t.All", all_message(env), options)
    assert value["u32"] == 2**32 - 1 and value["f32"] == -2
    assert value["u64"] == decimal.Decimal(2**64 - 1) and value["f64"] == -(2**63)
    assert value["color"] == 1 and value["colors"] == [0, 1, 7]
    assert value["by_id"] == [(2**31, {"name": "big", "tier": None})]
    assert value["w32"] is None and value["wu32"] == 2**32 - 1 and value["wu64"] is None
    assert json.loads(value["any"]) == {"@type": "type.googleapis.com/t.Customer", "name": "ann", "tier": 2}
    assert value["any"].startswith('{"@type":')  # compact, as Java's printer without whitespace
    assert value["empty"] == value["nothing"] == {"__dummy_field_in_empty_struct": None}
    assert value["nothings"] == []


def test_emit_default_values_fills_proto3_scalars_only(env):
    cls = message_class(env[1], "t.All")
    plain = decode(env, "t/all.proto", "t.All", cls())
    assert all(v is None or v == [] for v in plain.values())
    emitted = decode(env, "t/all.proto", "t.All", cls(), {"emit.default.values": "true"})
    assert emitted["i32"] == 0 and emitted["u64"] == 0 and emitted["fl"] == 0.0 and emitted["b"] is False
    assert emitted["s"] == "" and emitted["by"] == b"" and emitted["color"] == "RED"
    # messages, wrappers and proto3 `optional` have presence: still null when absent
    assert emitted["ts"] is None and emitted["w32"] is None and emitted["opt"] is None
    assert emitted["colors"] == [] and emitted["by_id"] == []
    unwrapped = decode(env, "t/all.proto", "t.All", all_message(env),
                       {"emit.default.values": "true", "unwrap.primitive.wrapper.types": "true"})
    assert unwrapped["w32"] == 0 and unwrapped["wu64"] == 0 and unwrapped["wby"] is None


def test_proto2_defaults_and_presence(env):
    cls = message_class(env[1], "p2.Legacy")
    assert decode(env, "p2/legacy.proto", "p2.Legacy", cls(id=0, count=0)) == {
        "id": 0, "name": "anon", "count": 0, "kind": "B", "xs": []}
    emitted = decode(env, "p2/legacy.proto", "p2.Legacy", cls(id=1), {"emit.default.values": "true"})
    assert emitted == {"id": 1, "name": "anon", "count": None, "kind": "B", "xs": []}


def test_recursion_is_refused_unless_a_depth_is_given(env):
    for depth in (None, "0", "11"):
        options = None if depth is None else {"recursive.fields.max.depth": depth}
        with pytest.raises(ConfigError, match="recursive"):
            decoder(env, "r/person.proto", "r.Person", options)
    one = decoder(env, "r/person.proto", "r.Person", {"recursive.fields.max.depth": "1"}).arrow_type
    assert one == pa.struct([("name", pa.string())])
    two = decoder(env, "r/person.proto", "r.Person", {"recursive.fields.max.depth": "2"}).arrow_type
    person = pa.struct([("name", pa.string())])
    assert two == pa.struct([("name", pa.string()), ("bff", person), ("friends", pa.list_(person))])
    cls = message_class(env[1], "r.Person")
    deep = cls(name="a")
    deep.bff.name = "b"
    deep.bff.bff.name = "c"
    deep.friends.add(name="d").bff.name = "e"
    assert decode(env, "r/person.proto", "r.Person", deep, {"recursive.fields.max.depth": "2"}) == {
        "name": "a", "bff": {"name": "b"}, "friends": [{"name": "d"}]}


def test_any_of_an_unknown_type_fails_as_json(env):
    msg = message_class(env[1], "t.All")()
    msg.any.type_url, msg.any.value = "type.googleapis.com/t.Missing", b"\x08\x01"
    with pytest.raises(PayloadError, match=r"t\.Missing"):
        decode(env, "t/all.proto", "t.All", msg, {"convert.any.fields.to.json": "true"})


def test_an_empty_top_level_message_is_an_empty_struct(env):
    assert decoder(env, "t/all.proto", "t.Nothing").arrow_type == pa.struct([])
    assert decode(env, "t/all.proto", "t.Nothing", message_class(env[1], "t.Nothing")()) == {}
    retained = decoder(env, "t/all.proto", "t.Nothing", {"retain.empty.message.types": "true"})
    assert retained.arrow_type == pa.struct([("__dummy_field_in_empty_struct", pa.string())])


def test_option_names_values_and_defaults():
    assert protobuf_options(None) == protobuf_options({k: v for k, v in OPTION_DEFAULTS.items()})
    parsed = protobuf_options({"Emit.Default.Values": "TRUE", "MODE": "permissive"})
    assert parsed.emit_default_values and parsed.mode == "PERMISSIVE"
    with pytest.raises(ConfigError, match="unknown Protobuf option"):
        protobuf_options({"emit.defaults": "true"})
    with pytest.raises(ConfigError, match="true or false"):
        protobuf_options({"enums.as.ints": "yes"})
    with pytest.raises(ConfigError, match="integer"):
        protobuf_options({"recursive.fields.max.depth": "deep"})
    with pytest.raises(ConfigError, match="FAILFAST or PERMISSIVE"):
        protobuf_options({"mode": "DROPMALFORMED"})


def test_permissive_mode_reads_a_malformed_payload_as_null(env):
    truncated = all_message(env).SerializeToString()[:-3]
    schema_id, all_at = env[2]["t/all.proto"].id, (2,)
    with pytest.raises(PayloadError, match=r"does not parse as t\.All"):
        decoder(env, "t/all.proto", "t.All").decode(schema_id, all_at, truncated)
    permissive = decoder(env, "t/all.proto", "t.All", {"mode": "PERMISSIVE"})
    assert permissive.decode(schema_id, all_at, truncated) is None
    with pytest.raises(PayloadError, match=r"wrote message t\.Customer"):  # not a malformed payload: still fails
        permissive.decode(schema_id, (0,), truncated)

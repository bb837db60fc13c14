"""Registered Protobuf schemas to descriptors: .proto source through protoc, base64 descriptors, references,
well-known imports, message indexes as Confluent's serializer computes them, and protoc's errors."""

from __future__ import annotations

import base64

import pytest
from confluent_kafka.schema_registry.common.protobuf import _create_index_array
from unit.formats.codec_support import compile_protos

from kafka_spark.errors import ConfigError
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.protobuf.schema import find_message, load_schema, message_at, message_indexes, messages

NESTED = """
syntax = "proto3";
package n;
message A { message B { message C { int32 x = 1; } } message D {} }
message E { message F {} }
message G {}
"""


class Source:
    """Schemas by (subject, version), for references."""

    def __init__(self, schemas: dict[str, RegisteredSchema]) -> None:
        self.schemas = schemas

    def by_id(self, schema_id: int) -> RegisteredSchema:
        raise AssertionError("not used")

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        return self.schemas[reference.subject]


def proto(text: str, *refs: str) -> RegisteredSchema:
    return RegisteredSchema(text, "PROTOBUF", tuple(SchemaReference(r, r, 1) for r in refs))


def test_message_indexes_match_confluents_serializer():
    file = load_schema(proto(NESTED), Source({}))
    theirs = compile_protos({"n.proto": NESTED}).FindFileByName("n.proto")
    names = [m.full_name for m in messages(file)]
    assert names == ["n.A", "n.A.B", "n.A.B.C", "n.A.D", "n.E", "n.E.F", "n.G"]
    for name in names:
        indexes = message_indexes(find_message(file, name))
        assert list(indexes) == _create_index_array(theirs.pool.FindMessageTypeByName(name))
        assert message_at(file, indexes).full_name == name
    assert find_message(file, None).full_name == "n.A"
    assert find_message(file, "G").full_name == "n.G"  # a top-level message by its simple name
    assert message_at(file, ()).full_name == "n.A"
    for bad in ((3,), (0, 2), (-1,)):
        with pytest.raises(IndexError):
            message_at(file, bad)


def test_references_mix_source_and_base64_and_reach_well_known_files():
    money = 'syntax = "proto3"; package m; import "google/protobuf/timestamp.proto";\n' \
            "message Money { int64 units = 1; google.protobuf.Timestamp at = 2; }\n"
    base = compile_protos({"m/money.proto": money}).FindFileByName("m/money.proto")
    price = 'syntax = "proto3"; package p; import "m/money.proto";\nmessage Price { m.Money money = 1; }\n'
    root = ('syntax = "proto3"; package r; import "p/price.proto"; import "google/type/date.proto";\n'
            'import "confluent/meta.proto";\n'
            "message Root { p.Price price = 1; google.type.Date day = 2; }\n")
    source = Source({"m/money.proto": RegisteredSchema(base64.b64encode(base.serialized_pb).decode(), "PROTOBUF"),
                     "p/price.proto": proto(price, "m/money.proto")})
    file = load_schema(proto(root, "p/price.proto"), source)
    message = find_message(file, "r.Root")
    price_type = message.fields_by_name["price"].message_type
    assert price_type.fields_by_name["money"].message_type.fields_by_name["at"].message_type.full_name == \
        "google.protobuf.Timestamp"
    assert message.fields_by_name["day"].message_type.full_name == "google.type.Date"
    # the same content gives the same descriptor without compiling again
    assert load_schema(proto(root, "p/price.proto"), source) is file


@pytest.mark.parametrize(("text", "refs", "error"), [
    ('syntax = "proto3";\nmessage A { Foo x = 1; }\n', (), r'2:13: "Foo" is not defined'),
    ('syntax = "proto3";\nimport "nope.proto";\nmessage A {}\n', (), r"nope\.proto: File not found"),
    ('syntax = "proto3";\nmessage A { int32 x = 1 }\n', (), r"2:25: Expected \";\""),
    ("CgRhLnByb3RvEgNhYmM=", (), r"p/x\.proto.*imports|not a FileDescriptorProto|invalid"),
    ("AAAA", (), r"not a FileDescriptorProto|invalid"),
])
def test_schemas_that_do_not_compile_are_config_errors_with_protocs_message(capfd, text, refs, error):
    broken = {"p/x.proto": RegisteredSchema('syntax = "proto3"; import "p/y.proto"; message X {}', "PROTOBUF",
                                            (SchemaReference("p/y.proto", "p/y.proto", 1),)),
              "p/y.proto": RegisteredSchema('syntax = "proto3"; import "p/x.proto"; message Y {}', "PROTOBUF",
                                            (SchemaReference("p/x.proto", "p/x.proto", 1),))}
    with pytest.raises(ConfigError, match=error):
        load_schema(proto(text, *refs), Source(broken))
    assert capfd.readouterr().err == ""  # protoc's diagnostics go into the error, not to stderr


def test_reference_cycles_paths_and_types_are_refused():
    cyclic = {"a.proto": proto('syntax = "proto3"; import "b.proto";', "b.proto"),
              "b.proto": proto('syntax = "proto3"; import "a.proto";', "a.proto")}
    with pytest.raises(ConfigError, match="cycle"):
        load_schema(proto('syntax = "proto3"; import "a.proto";', "a.proto"), Source(cyclic))
    escaping = {"../evil.proto": proto('syntax = "proto3"; message E {}')}
    with pytest.raises(ConfigError, match="not a relative path"):
        load_schema(proto('syntax = "proto3"; import "../evil.proto";', "../evil.proto"), Source(escaping))
    with pytest.raises(ConfigError, match="AVRO, not PROTOBUF"):
        load_schema(RegisteredSchema('"string"', "AVRO"), Source({}))
    with pytest.raises(ConfigError, match="declares no message"):
        find_message(load_schema(proto('syntax = "proto3"; enum E { Z = 0; }'), Source({})), None)

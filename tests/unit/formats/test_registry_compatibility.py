"""The test registry's Avro compatibility check agrees with Apache Avro's own ReaderWriterCompatibilityChecker on
reader/writer pairs covering every resolution rule, and applies the levels (BACKWARD, FORWARD, FULL, their
transitive forms, NONE) as Confluent's registry does."""

from __future__ import annotations

import json
from typing import Any

import avro.schema
import fastavro
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from harness.avro_compatibility import LEVELS, incompatibilities, reader_problems


def _record(*fields: dict[str, Any], name: str = "R", **more: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "t", "fields": list(fields), **more}


def _f(name: str, kind: Any, **more: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, **more}


_ENUM = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
_NODE = _record(_f("value", "int"), _f("next", ["null", "t.R"], default=None))
SCHEMAS: dict[str, Any] = {
    "int": _record(_f("x", "int")),
    "long": _record(_f("x", "long")),
    "float": _record(_f("x", "float")),
    "double": _record(_f("x", "double")),
    "string": _record(_f("x", "string")),
    "bytes": _record(_f("x", "bytes")),
    "boolean": _record(_f("x", "boolean")),
    "date": _record(_f("x", {"type": "int", "logicalType": "date"})),
    "null|int": _record(_f("x", ["null", "int"], default=None)),
    "null|long": _record(_f("x", ["null", "long"], default=None)),
    "int|string": _record(_f("x", ["int", "string"])),
    "added with default": _record(_f("x", "int"), _f("y", "string", default="")),
    "added without default": _record(_f("x", "int"), _f("y", "string")),
    "renamed by alias": _record(_f("z", "int", aliases=["x"])),
    "other record name": _record(_f("x", "int"), name="S"),
    "record alias": _record(_f("x", "int"), name="S", aliases=["t.R"]),
    "enum AB": _record(_f("x", _ENUM)),
    "enum ABC": _record(_f("x", {**_ENUM, "symbols": ["A", "B", "C"]})),
    "enum A with default": _record(_f("x", {**_ENUM, "symbols": ["A", "Z"], "default": "Z"})),
    "fixed 4": _record(_f("x", {"type": "fixed", "name": "F", "size": 4})),
    "fixed 8": _record(_f("x", {"type": "fixed", "name": "F", "size": 8})),
    "array int": _record(_f("x", {"type": "array", "items": "int"})),
    "array long": _record(_f("x", {"type": "array", "items": "long"})),
    "map string": _record(_f("x", {"type": "map", "values": "string"})),
    "map bytes": _record(_f("x", {"type": "map", "values": "bytes"})),
    "nested record": _record(_f("x", _record(_f("a", "int"), name="Inner"))),
    "nested record widened": _record(_f("x", _record(_f("a", "long"), _f("b", "int", default=1), name="Inner"))),
    "linked list": _NODE,
    "linked list widened": _record(_f("value", "long"), _f("next", ["null", "t.R"], default=None)),
}


def _apache_says(reader: Any, writer: Any) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(avro.schema.parse(json.dumps(reader)),
                                                                  avro.schema.parse(json.dumps(writer)))
    return result.compatibility is SchemaCompatibilityType.compatible


def test_agrees_with_apache_avro_on_every_pair() -> None:
    parsed = {name: fastavro.parse_schema(schema) for name, schema in SCHEMAS.items()}
    disagreements, compatible = [], 0
    for reader in SCHEMAS:
        for writer in SCHEMAS:
            ours = not reader_problems(parsed[reader], parsed[writer])
            compatible += ours
            if ours != _apache_says(SCHEMAS[reader], SCHEMAS[writer]):
                disagreements.append(f"{reader} reads {writer}: ours {ours}")
    assert disagreements == []
    assert 40 < compatible < len(SCHEMAS) ** 2 - 40  # both verdicts are well represented


def test_levels() -> None:
    v1 = fastavro.parse_schema(SCHEMAS["int"])
    v2 = fastavro.parse_schema(SCHEMAS["added with default"])
    removed_default = fastavro.parse_schema(_record(_f("y", "string", default="")))
    new_required = fastavro.parse_schema(SCHEMAS["added without default"])
    assert LEVELS == ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                      "FULL_TRANSITIVE")
    assert incompatibilities("BACKWARD", v2, [v1]) == []
    assert incompatibilities("FORWARD", v2, [v1]) == []  # v1 ignores the new field
    assert incompatibilities("FULL", v2, [v1]) == []
    assert incompatibilities("BACKWARD", new_required, [v1]) == [
        "the new schema cannot read the old: $.y: the reader's field is not in the writer's data and has no default"]
    assert incompatibilities("FORWARD", new_required, [v1]) == []
    assert incompatibilities("NONE", new_required, [v1]) == []
    assert incompatibilities("BACKWARD", v1, []) == []
    # x dropped: v2 reads it (y has a default), v1 cannot (x has none); transitive levels see v1 as well
    assert incompatibilities("FORWARD", removed_default, [v1, v2]) != []
    only_y = fastavro.parse_schema(_record(_f("y", "string")))
    assert incompatibilities("BACKWARD", only_y, [v1, v2]) == []  # v2 wrote y
    assert incompatibilities("BACKWARD_TRANSITIVE", only_y, [v1, v2]) != []  # v1 did not
    assert incompatibilities("FULL_TRANSITIVE", v2, [v1, v2]) == []

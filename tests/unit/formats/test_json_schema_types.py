"""Every rule of the JSON Schema -> Arrow mapping, its values, `$ref` resolution and what it refuses."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kafka_spark.errors import ConfigError, PayloadError
from kafka_spark.formats.json_schema.codec import json_schema_decoder
from kafka_spark.formats.model import RegisteredSchema, SchemaReference

TEXT = pa.string()


class Source:
    def __init__(self, schemas: dict[str, dict]) -> None:
        self.schemas = schemas

    def by_id(self, schema_id: int) -> RegisteredSchema:
        raise AssertionError("validation is off in these tests")

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(self.schemas[reference.subject]), "JSON", ())


def decoder(schema, refs: dict[str, dict] | None = None):
    references = tuple(SchemaReference(name, name, 1) for name in (refs or {}))
    reader = RegisteredSchema(json.dumps(schema), "JSON", references)
    return json_schema_decoder(reader, Source(refs or {}), {"validate": "false"})


def read(schema, value, refs=None):
    dec = decoder(schema, refs)
    out = dec.decode(1, (), json.dumps(value).encode())
    pa.array([out], type=dec.arrow_type)
    return out


@pytest.mark.parametrize(("schema", "arrow"), [
    ({"type": "integer"}, pa.int64()),
    ({"type": "number"}, pa.float64()),
    ({"type": "boolean"}, pa.bool_()),
    ({"type": "string", "format": "date"}, pa.string()),
    ({"type": ["null", "integer"]}, pa.int64()),
    ({"type": ["string", "integer"]}, TEXT),
    ({"oneOf": [{"type": "null"}, {"type": "boolean"}]}, pa.bool_()),
    ({"anyOf": [{"type": "number"}, {"type": "null"}]}, pa.float64()),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, TEXT),
    ({"enum": ["a", "b", None]}, pa.string()),
    ({"enum": [1, 2]}, pa.int64()),
    ({"enum": [1, 2.5]}, pa.float64()),
    ({"enum": [True, False]}, pa.bool_()),
    ({"enum": ["a", 1]}, TEXT),
    ({"const": 3}, pa.int64()),
    ({"type": "array", "items": {"type": "integer"}}, pa.list_(pa.int64())),
    ({"type": "array"}, TEXT),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, TEXT),
    ({"type": "object", "additionalProperties": {"type": "number"}}, pa.map_(pa.string(), pa.float64())),
    ({"type": "object"}, TEXT),
    ({"properties": {"b": {"type": "string"}, "a": {"type": "integer"}}},
     pa.struct([("b", pa.string()), ("a", pa.int64())])),
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "string"}}}]},
     pa.struct([("a", pa.int64()), ("b", pa.string())])),
    ({"allOf": [{"type": "string"}]}, pa.string()),
    ({"allOf": [{"type": "string"}, {"properties": {"a": {}}}]}, TEXT),
    ({}, TEXT),
    (True, TEXT),
    ({"type": "null"}, TEXT),
])
def test_types(schema, arrow):
    assert decoder(schema).arrow_type == arrow


def test_values_follow_their_types():
    schema = {"type": "object", "properties": {
        "i": {"type": "integer"}, "f": {"type": "number"}, "any": {}, "m": {"additionalProperties": {"type": "integer"},
                                                                         "type": "object"},
        "l": {"type": "array", "items": {"type": ["string", "null"]}}, "e": {"enum": ["x", 1]}}}
    value = {"i": 2.0, "f": 3, "any": {"z": [1, "é"]}, "m": {"a": 1, "b": None}, "l": ["s", None], "e": "x",
             "extra": 1}
    assert read(schema, value) == {"i": 2, "f": 3.0, "any": '{"z":[1,"é"]}', "m": [("a", 1), ("b", None)],
                                   "l": ["s", None], "e": '"x"'}
    assert read(schema, {}) == dict.fromkeys(("i", "f", "any", "m", "l", "e"))
    assert read(schema, None) is None
    assert read({"type": "string"}, "top") == "top"


@pytest.mark.parametrize(("schema", "value", "error"), [
    ({"type": "integer"}, 1.5, r"at \$ is a number, expected an integer"),
    ({"type": "integer"}, True, r"at \$ is a boolean, expected an integer"),
    ({"type": "integer"}, 2**64, r"beyond 64 bits"),
    ({"type": "number"}, "1", r"at \$ is a string, expected a number"),
    ({"type": "boolean"}, 0, r"at \$ is a number, expected a boolean"),
    ({"type": "string"}, ["a"], r"at \$ is an array, expected a string"),
    ({"properties": {"a": {"type": "array", "items": {"properties": {"b": {"type": "integer"}}}}}},
     {"a": [{"b": 1}, {"b": "2"}]}, r"at \$\.a\[1\]\.b is a string"),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"k": []}, r"at \$\.k is an array"),
    ({"properties": {"a": {"type": "integer"}}}, [1], r"at \$ is an array, expected an object"),
])
def test_values_of_the_wrong_json_type_name_their_path(schema, value, error):
    with pytest.raises(PayloadError, match=error):
        read(schema, value)


def test_local_and_registered_references():
    line = {"type": "object", "properties": {"sku": {"type": "string"}}}
    refs = {"https://example.com/schemas/money.json": {
        "$id": "https://example.com/schemas/money.json", "type": "object",
        "properties": {"units": {"type": "integer"}, "currency": {"$ref": "#/$defs/Currency"}},
        "$defs": {"Currency": {"enum": ["EUR", "USD"]}}}}
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/schemas/order.json",
        "$defs": {"Line": line},
        "definitions": {"Lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}}},
        "properties": {"lines": {"$ref": "#/definitions/Lines"}, "price": {"$ref": "money.json"},
                       "tax": {"$ref": "https://example.com/schemas/money.json#/properties/units"}},
    }
    dec = decoder(schema, refs)
    assert dec.arrow_type == pa.struct([
        ("lines", pa.list_(pa.struct([("sku", pa.string())]))),
        ("price", pa.struct([("units", pa.int64()), ("currency", pa.string())])),
        ("tax", pa.int64()),
    ])
    value = {"lines": [{"sku": "a"}], "price": {"units": 5, "currency": "EUR"}, "tax": 1}
    assert dec.decode(1, (), json.dumps(value).encode()) == value


@pytest.mark.parametrize(("schema", "refs", "error"), [
    ({"$ref": "#"}, {}, "recursive"),
    ({"definitions": {"Node": {"properties": {"next": {"$ref": "#/definitions/Node"}}}},
      "$ref": "#/definitions/Node"}, {}, "recursive"),
    ({"properties": {"a": {"$ref": "other.json"}}},
     {"other.json": {"properties": {"back": {"$ref": "other.json"}}}}, "recursive"),
    ({"$ref": "#/definitions/Missing"}, {}, "points at nothing"),
    ({"$ref": "elsewhere.json"}, {}, "names no referenced schema"),
    ({"$ref": "#anchor"}, {}, "only JSON-pointer fragments"),
])
def test_references_that_cannot_be_mapped_are_config_errors(schema, refs, error):
    with pytest.raises(ConfigError, match=error):
        decoder(schema, refs)


def test_schema_text_and_type_errors():
    with pytest.raises(ConfigError, match="not JSON"):
        json_schema_decoder(RegisteredSchema("{nope", "JSON"), Source({}))
    with pytest.raises(ConfigError, match="PROTOBUF, not JSON"):
        json_schema_decoder(RegisteredSchema("{}", "PROTOBUF"), Source({}))


FREE = {"type": "object", "properties": {"free": {}}}


class _Writer(Source):
    def by_id(self, schema_id: int) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(FREE), "JSON", (), schema_id)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("validate", ["true", "false"])
def test_any_nesting_decodes_or_is_a_payload_error(validate: str) -> None:
    # json.loads and json.dumps stop at the same recursion limit, and a free-form value is written back as text
    # from deeper in the stack than it was read: nestings just under the limit (about 990 on an empty stack)
    # parse and then cannot be written. The sweep spans that window wherever the test's own stack puts it.
    dec = json_schema_decoder(RegisteredSchema(json.dumps(FREE), "JSON", (), 1), _Writer({}), {"validate": validate})
    outcomes = set()
    for depth in [*range(500, 1101), 100_000]:
        try:
            out = dec.decode(1, (), f'{{"free": {_nested(depth)}}}'.encode())
        except PayloadError as exc:
            assert "nests too deeply" in str(exc) or "not JSON" in str(exc)
            outcomes.add("refused")
        else:
            assert out == {"free": _nested(depth).replace("][", "],[")}
            outcomes.add("decoded")
    assert outcomes == {"decoded", "refused"}


def test_any_nesting_encodes_or_is_a_payload_error() -> None:
    from kafka_spark.formats.json_schema.codec import json_schema_encoder

    enc = json_schema_encoder(RegisteredSchema(json.dumps(FREE), "JSON", (), 1), Source({}), {"validate": "true"})
    outcomes = set()
    for depth in [*range(500, 1101), 100_000]:
        try:
            enc.encode({"free": _nested(depth)})
        except PayloadError as exc:
            assert "nests too deeply" in str(exc) or "JSON text" in str(exc)
            outcomes.add("refused")
        else:
            outcomes.add("encoded")
    assert outcomes == {"encoded", "refused"}


def test_a_schema_nested_too_deeply_is_a_config_error() -> None:
    deep = '{"items": ' * 5000 + "{}" + "}" * 5000
    with pytest.raises(ConfigError, match="not JSON"):
        json_schema_decoder(RegisteredSchema(deep, "JSON"), Source({}))
    # 800 levels of JSON parse; mapping takes three frames for each level of properties
    objects = '{"properties": {"a": ' * 400 + "{}" + "}}" * 400
    with pytest.raises(ConfigError, match="nests too deeply"):
        json_schema_decoder(RegisteredSchema(objects, "JSON"), Source({}), {"validate": "false"})

"""A JSON Schema as an Arrow type, with converters between parsed JSON values and that type's Python values.

Mapping: an object with `properties` is a struct in declared order; an object with only
`additionalProperties: {schema}` a map<string, V>; an array with `items` a list; integer int64, number
float64, boolean bool, string string (a `format` such as date-time stays a string, as Spark's `from_json`
reads it without a schema hint); `["T", "null"]`, and `oneOf`/`anyOf` with one non-null branch, a
(nullable) T; `allOf` of objects a struct of their properties; `enum`/`const` a string, or int64 / float64 /
bool when every literal is one; anything else (no type, `{}`, `true`, several types or branches, tuple
arrays, objects without properties) a string holding the value's JSON text. Every field is nullable."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin

import pyarrow as pa

from kafka_spark.errors import ConfigError, PayloadError

# (JSON value, JSON path) -> Python value of the Arrow type
ToArrow = Callable[[Any, str], Any]
# (Python value of the Arrow type, path) -> JSON value
ToJson = Callable[[Any, str], Any]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_SCALARS = {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_(), "string": pa.string()}


@dataclass(frozen=True)
class JsonType:
    """One schema's Arrow type and its converters in both directions."""

    arrow_type: pa.DataType
    to_arrow: ToArrow
    to_json: ToJson
    fields: dict[str, JsonType] | None = None  # a struct's, by name
    # integer, number, boolean, string, text (JSON text of a free-form value), list, map or struct
    kind: str = "text"
    item: JsonType | None = None  # a list's items, a map's values


@dataclass(frozen=True)
class _Where:
    """A schema node and the document (and base URL) its local `$ref`s point into."""

    node: Any
    document: Any
    base: str


def json_type(schema: Any, documents: Mapping[str, Any], base: str = "") -> JsonType:
    """The mapping of `schema` (parsed JSON); `documents` are the referenced schemas by their `$ref` URL.
    ConfigError for a `$ref` that resolves to nothing or back to itself."""
    return _Mapper(documents).map(_Where(schema, schema, _base(schema, base)), ())


def json_text(value: Any) -> str:
    """A JSON value as compact text (as Confluent's serializer writes it)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _base(node: Any, base: str) -> str:
    found = node.get("$id") if isinstance(node, dict) else None
    return urljoin(base, found) if isinstance(found, str) else base


class _Mapper:
    def __init__(self, documents: Mapping[str, Any]) -> None:
        self.documents = documents

    def map(self, where: _Where, refs: tuple[str, ...]) -> JsonType:
        node = where.node
        if node is True or node == {} or not isinstance(node, dict):
            return _JSON_TEXT
        ref = node.get("$ref")
        if isinstance(ref, str):
            target, key = self.resolve(where, ref)
            if key in refs:
                raise ConfigError(f"JSON Schema $ref {ref!r} is recursive ({' -> '.join((*refs, key))}); a column "
                                  f"type cannot hold it")
            return self.map(target, (*refs, key))
        for keyword in ("oneOf", "anyOf"):
            if isinstance(node.get(keyword), list):
                branches = [b for b in node[keyword] if not _is_null(b)]
                if len(branches) == 1:
                    return self.map(_Where(branches[0], where.document, where.base), refs)
                return _JSON_TEXT
        if isinstance(node.get("allOf"), list):
            return self.all_of(where, node["allOf"], refs)
        if "const" in node:
            return _literals([node["const"]])
        if isinstance(node.get("enum"), list):
            return _literals(node["enum"])
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1:
                return _JSON_TEXT
            kind = kinds[0]
        if kind is None and "properties" in node:
            kind = "object"
        if kind in _SCALARS:
            return _scalar(kind)
        if kind == "object":
            return self.object(where, refs)
        if kind == "array":
            items = node.get("items")
            if isinstance(items, (dict, bool)) and "prefixItems" not in node:
                return _list(self.map(_Where(items, where.document, where.base), refs))
        return _JSON_TEXT

    def resolve(self, where: _Where, ref: str) -> tuple[_Where, str]:
        """The node `ref` points at and a key naming it (for recursion checks)."""
        url, fragment = urldefrag(ref)
        if not url:
            document, base = where.document, where.base
        else:
            document = None
            for candidate in (url, urljoin(where.base, url)):
                if candidate in self.documents:
                    url, document = candidate, self.documents[candidate]
                    break
            if document is None:
                raise ConfigError(f"JSON Schema $ref {ref!r} names no referenced schema; references: "
                                  f"{sorted(self.documents)}")
            base = _base(document, url)
        if fragment and not fragment.startswith("/"):
            raise ConfigError(f"JSON Schema $ref {ref!r}: only JSON-pointer fragments are supported")
        node = document
        for part in fragment.split("/")[1:] if fragment else []:
            token = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise ConfigError(f"JSON Schema $ref {ref!r} points at nothing")
        return _Where(node, document, base), f"{url}#{fragment}" if url else f"{where.base}#{fragment}"

    def object(self, where: _Where, refs: tuple[str, ...]) -> JsonType:
        node = where.node
        properties = node.get("properties")
        if isinstance(properties, dict) and properties:
            return _struct({name: self.map(_Where(sub, where.document, where.base), refs)
                            for name, sub in properties.items()})
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra and not node.get("patternProperties"):
            return _map(self.map(_Where(extra, where.document, where.base), refs))
        return _JSON_TEXT

    def all_of(self, where: _Where, branches: list[Any], refs: tuple[str, ...]) -> JsonType:
        if len(branches) == 1:
            return self.map(_Where(branches[0], where.document, where.base), refs)
        fields: dict[str, JsonType] = {}
        for branch in branches:
            mapped = self.map(_Where(branch, where.document, where.base), refs)
            if mapped.fields is None:
                return _JSON_TEXT
            for name, field in mapped.fields.items():
                fields.setdefault(name, field)
        return _struct(fields) if fields else _JSON_TEXT


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "null" and len(node) == 1


def _wrong(expected: str, value: Any, path: str) -> PayloadError:
    return PayloadError(f"JSON value at {path} is {_json_kind(value)}, expected {expected}")


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _to_int(value: Any, path: str) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong("an integer", value, path)
    if isinstance(value, float):
        if not value.is_integer():
            raise _wrong("an integer", value, path)
        value = int(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise PayloadError(f"JSON integer at {path} is beyond 64 bits: {value}")
    return value


def _to_float(value: Any, path: str) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong("a number", value, path)
    try:
        return float(value)
    except OverflowError:
        raise PayloadError(f"JSON number at {path} is beyond a double: {value}") from None


def _checker(kind: type, expected: str) -> ToArrow:
    def check(value: Any, path: str) -> Any:
        if value is None or (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
            return value
        raise _wrong(expected, value, path)
    return check


def _same(value: Any, path: str) -> Any:
    return value


def _from_float(value: Any, path: str) -> Any:
    # JSON has no NaN or infinity; Python's json writes them as bare words other parsers refuse.
    if value is not None and not math.isfinite(value):
        raise PayloadError(f"{path}: {value} has no JSON form")
    return value


def _scalar(kind: str) -> JsonType:
    if kind == "integer":
        return JsonType(pa.int64(), _to_int, _same, kind=kind)
    if kind == "number":
        return JsonType(pa.float64(), _to_float, _from_float, kind=kind)
    if kind == "boolean":
        return JsonType(pa.bool_(), _checker(bool, "a boolean"), _same, kind=kind)
    return JsonType(pa.string(), _checker(str, "a string"), _same, kind="string")


def _text_to_arrow(value: Any, path: str) -> Any:
    return None if value is None else json_text(value)


def _text_to_json(value: Any, path: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"{path}: the column holds JSON text, and {value!r} is not: {exc}") from None


_JSON_TEXT = JsonType(pa.string(), _text_to_arrow, _text_to_json)


def _literals(values: list[Any]) -> JsonType:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return _scalar("boolean")
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return _scalar("integer")
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return _scalar("number")
    if all(isinstance(v, str) for v in present):
        return _scalar("string")
    return _JSON_TEXT


def _list(item: JsonType) -> JsonType:
    each_arrow, each_json = item.to_arrow, item.to_json

    def to_arrow(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _wrong("an array", value, path)
        return [each_arrow(v, f"{path}[{i}]") for i, v in enumerate(value)]

    def to_json(value: Any, path: str) -> Any:
        if value is None:
            return None
        return [each_json(v, f"{path}[{i}]") for i, v in enumerate(value)]

    return JsonType(pa.list_(item.arrow_type), to_arrow, to_json, kind="list", item=item)


def _map(value_type: JsonType) -> JsonType:
    each_arrow, each_json = value_type.to_arrow, value_type.to_json

    def to_arrow(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _wrong("an object", value, path)
        return [(k, each_arrow(v, f"{path}.{k}")) for k, v in value.items()]

    def to_json(value: Any, path: str) -> Any:
        if value is None:
            return None
        pairs = value.items() if isinstance(value, Mapping) else value
        return {k: each_json(v, f"{path}.{k}") for k, v in pairs}

    return JsonType(pa.map_(pa.string(), value_type.arrow_type), to_arrow, to_json, kind="map", item=value_type)


def _struct(fields: dict[str, JsonType]) -> JsonType:
    items = [(name, t.to_arrow, t.to_json) for name, t in fields.items()]

    def to_arrow(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _wrong("an object", value, path)
        get = value.get
        return {name: convert(get(name), f"{path}.{name}") for name, convert, _ in items}

    def to_json(value: Any, path: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise PayloadError(f"{path}: expected a dict, got {type(value).__name__}")
        out = {}
        for name, _, convert in items:
            item = value.get(name)
            if item is not None:  # an absent property reads back as null: leave it out
                out[name] = convert(item, f"{path}.{name}")
        return out

    arrow = pa.struct([pa.field(name, t.arrow_type) for name, t in fields.items()])
    return JsonType(arrow, to_arrow, to_json, fields, kind="struct")

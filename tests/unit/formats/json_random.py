"""Random JSON payloads for a JSON Schema holding every mapping (types.py), written the many ways JSON allows and
a few it does not: for the column-wise path's parity tests and its fuzz target (tests/fuzz/columnar_targets.py).

Besides values of the right types: values of the wrong type, numbers in forms json.loads and msgspec read
differently (1.0 for an integer, -0, 1e400, NaN, thousands of digits), keys given twice, escapes (lone
surrogates among them), bytes that are not UTF-8, a byte-order mark, deep nesting, trailing text."""

from __future__ import annotations

import json
import random
from typing import Any

from kafka_spark.formats.encoding import InlineSource
from kafka_spark.formats.json_schema.codec import JsonSchemaDecoder, json_schema_decoder
from kafka_spark.formats.model import RegisteredSchema

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"}, "s": {"type": "string"},
    "e": {"enum": ["A", "B"]}, "ei": {"enum": [1, 2, 3]}, "c": {"const": 1.5},
    "ns": {"type": ["string", "null"]}, "one": {"oneOf": [{"type": "null"}, {"type": "integer"}]},
    "obj": {"type": "object", "properties": {"x": {"type": "integer"},
                                             "y": {"type": "array", "items": {"type": "string"}}}},
    "arr": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                         "v": {"type": "number"}}}},
    "m": {"type": "object", "additionalProperties": {"type": "integer"}},
    "mo": {"type": "object", "additionalProperties": {"type": "object", "properties": {"z": {"type": "boolean"}}}},
    "free": {}, "tup": {"type": "array", "prefixItems": [{"type": "integer"}]},
    "multi": {"type": ["integer", "string"]}, "lf": {"type": "array", "items": {}},
    "all": {"allOf": [{"properties": {"p": {"type": "integer"}}}, {"properties": {"q": {"type": "string"}}}]},
    "weird key": {"type": "integer"}, "_u": {"type": "string"}, "class": {"type": "integer"},
}}
_SCHEMA = RegisteredSchema(json.dumps(SCHEMA), "JSON", id=1)


class Verbatim(str):
    """Text written into the JSON as it is."""


_NUMBERS = ("1.0", "-0", "-0.0", "1e400", "-1e400", "NaN", "Infinity", "1E2", "0.1e-999", "9223372036854775808",
            "-9223372036854775809", "123456789012345678901234567890", "1" + "0" * 5000, "2.5e+3", "01")
_STRINGS = ("", "a", "é", "日本", "😀", "\u2028", "\\", '"', "\x7f", "\t")
_ESCAPES = ('"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\u00e9"', '"\\q"', '"a\tb"', '"\\/"')


def decoder(validate: bool = False) -> JsonSchemaDecoder:
    """A decoder of SCHEMA (registered as id 1)."""
    return json_schema_decoder(_SCHEMA, InlineSource(_SCHEMA), {"validate": str(validate).lower()})


def value(rng: random.Random) -> dict[str, Any]:
    """A random object of SCHEMA's properties, mostly of the right types."""
    out: dict[str, Any] = {}
    for name, node in SCHEMA["properties"].items():
        if rng.random() < 0.35:
            continue
        out[name] = _of(node, rng, 0)
    if rng.random() < 0.3:
        out["unknown"] = _any(rng, 0)
    return out


def _of(node: dict[str, Any], rng: random.Random, depth: int) -> Any:
    if rng.random() < 0.015:
        return _any(rng, depth)  # of any type: mostly the wrong one
    if rng.random() < 0.05:
        return None
    kind = node.get("type")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"])
    if "enum" in node:
        return rng.choice(node["enum"])
    if "const" in node:
        return node["const"]
    if "oneOf" in node:
        return rng.randint(-5, 5)
    if kind == "integer":
        return rng.choice((0, 1, -7, 2**53 + 1, 2**63 - 1, -(2**63)))
    if kind == "number":
        return rng.choice((0.0, -0.0, 2.5, 1e300, 5, 2**64 + 1))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        return rng.choice(_STRINGS)
    if kind == "array" and "items" in node and "prefixItems" not in node:
        return [_of(node["items"], rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if "properties" in node:
        return {k: _of(v, rng, depth + 1) for k, v in node["properties"].items() if rng.random() < 0.7}
    if "allOf" in node:
        return {"p": rng.randint(0, 9), "q": rng.choice(_STRINGS)}
    if "additionalProperties" in node:
        return {rng.choice(_STRINGS): _of(node["additionalProperties"], rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return _any(rng, depth)


def _any(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.choice((0, -3, 2**70, 0.5))
    if pick == 3:
        return rng.choice(_STRINGS)
    if pick == 4:
        return Verbatim(rng.choice(_NUMBERS))
    if pick == 5:
        return Verbatim(rng.choice(_ESCAPES))
    if pick == 6:
        return [_any(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(("x", "y", "é")): _any(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def write(item: Any, rng: random.Random) -> str:
    """JSON text of `item`, spaced and escaped at random; now and then an object's key given twice."""
    if isinstance(item, Verbatim):
        return str(item)
    if isinstance(item, dict):
        pairs = [(k, write(v, rng)) for k, v in item.items()]
        if pairs and rng.random() < 0.1:
            k, _ = rng.choice(pairs)
            pairs.insert(0, (k, write(_any(rng, 2), rng)))  # an earlier occurrence, which json.loads drops
        sep = rng.choice((",", ", ", " ,\n "))
        return "{" + sep.join(f"{json.dumps(k, ensure_ascii=rng.random() < 0.5)}:{v}" for k, v in pairs) + "}"
    if isinstance(item, list):
        return "[" + ",".join(write(v, rng) for v in item) + "]"
    if isinstance(item, float) and item != item:
        return "NaN"
    return json.dumps(item, ensure_ascii=rng.random() < 0.5)


def payload(rng: random.Random) -> bytes:
    """One payload: a random value written at random, now and then spoiled."""
    data = write(value(rng), rng).encode("utf-8", "surrogatepass")
    spoil = rng.randrange(14)
    if spoil == 0:
        return data[:rng.randrange(len(data) + 1)]
    if spoil == 1:
        return data + rng.choice((b" ", b" x", b"}", b"\n", b" {}"))
    if spoil == 2:
        return b"\xef\xbb\xbf" + data
    if spoil == 3:
        at = data.find(b'"')
        return data if at < 0 else data[:at + 1] + rng.choice((b"\xff", b"\xed\xa0\x80", b"\xc3")) + data[at + 1:]
    if spoil == 4:
        deep = rng.choice((255, 256, 300, 2000))
        return b'{"deep":' + b"[" * deep + b"]" * deep + b"," + data[1:] if data.startswith(b"{") else data
    if spoil == 5:
        return rng.choice((b"null", b"[]", b"5", b'"x"', b"", b" ", b"{}"))
    return data

"""Hypothesis strategies of Avro schemas (every type, nested, logical types, unions) and of raw datums for them,
and of reader schemas that evolve a writer schema, for the block-path property tests."""

from __future__ import annotations

import copy
import io
import itertools
import json
from typing import Any

import fastavro
from hypothesis import strategies as st

from kafka_spark.formats.avro.types import normalize

PRIMITIVES = ["boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "int", "logicalType": "date"}, {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"}, {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"}, {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"}, {"type": "string", "logicalType": "uuid"},
]
UNIONS = [["null", "long", "string"], ["int", "long"], ["float", "double"]]


@st.composite
def _decimal(draw: Any) -> dict[str, Any]:
    if draw(st.booleans()):
        precision = draw(st.integers(1, 38))
        return {"type": "bytes", "logicalType": "decimal", "precision": precision,
                "scale": draw(st.integers(0, precision))}
    size = draw(st.integers(1, 16))
    precision = draw(st.integers(1, len(str((1 << (8 * size - 1)) - 1)) - 1))
    return {"type": "fixed", "name": "?", "size": size, "logicalType": "decimal", "precision": precision,
            "scale": draw(st.integers(0, precision))}


_LEAVES = st.one_of(
    st.sampled_from(PRIMITIVES), st.sampled_from(LOGICAL), _decimal(),
    st.lists(st.sampled_from("ABCDE"), min_size=1, max_size=4, unique=True).map(
        lambda s: {"type": "enum", "name": "?", "symbols": s}),
    st.integers(1, 6).map(lambda n: {"type": "fixed", "name": "?", "size": n}),
)


def _record(fields: list[Any]) -> dict[str, Any]:
    return {"type": "record", "name": "?", "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(fields)]}


def _nested(inner: Any) -> Any:
    return st.one_of(
        inner.map(lambda t: {"type": "array", "items": t}),
        inner.map(lambda t: {"type": "map", "values": t}),
        st.lists(inner, min_size=1, max_size=4).map(_record),
        inner.filter(lambda t: not isinstance(t, list)).flatmap(
            lambda t: st.sampled_from([["null", t], [t, "null"]])),
        st.sampled_from(UNIONS),
    )


def _named(schema: Any) -> Any:
    """`schema` with every "?" name replaced by a unique one."""
    counter = itertools.count()

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(m) for m in node]
        if not isinstance(node, dict):
            return node
        out = dict(node)
        if out.get("name") == "?":
            out["name"] = f"T{next(counter)}"
        for key in ("items", "values"):
            if key in out:
                out[key] = walk(out[key])
        if "fields" in out:
            out["fields"] = [{**f, "type": walk(f["type"])} for f in out["fields"]]
        return out

    return walk(copy.deepcopy(schema))


SCHEMAS = st.lists(st.recursive(_LEAVES, _nested, max_leaves=8), min_size=1, max_size=5).map(
    lambda fields: _named({**_record(fields), "name": "Top", "namespace": "prop"}))


def raw_value(draw: Any, node: Any) -> Any:
    """A value of `node` as fastavro writes it for the schema without logical types (`normalize`d)."""
    if isinstance(node, list):
        return raw_value(draw, draw(st.sampled_from(node)))
    kind = node if isinstance(node, str) else node["type"]
    if kind == "null":
        return None
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "int":
        return draw(st.integers(-(1 << 31), (1 << 31) - 1))
    if kind == "long":
        return draw(st.one_of(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-5000, 5000)))
    if kind == "float":
        return draw(st.floats(width=32, allow_nan=False))
    if kind == "double":
        return draw(st.floats(allow_nan=False))
    if kind == "bytes":
        return draw(st.binary(max_size=17))
    if kind == "string":
        return draw(st.text(max_size=8))
    if kind == "fixed":
        return draw(st.binary(min_size=node["size"], max_size=node["size"]))
    if kind == "enum":
        return draw(st.sampled_from(node["symbols"]))
    if kind == "array":
        return [raw_value(draw, node["items"]) for _ in range(draw(st.integers(0, 3)))]
    if kind == "map":
        keys = draw(st.lists(st.text(max_size=4), max_size=3, unique=True))
        return {k: raw_value(draw, node["values"]) for k in keys}
    return {f["name"]: raw_value(draw, f["type"]) for f in node["fields"]}


def encode(schema: Any, value: Any) -> bytes:
    """`value` (raw) written with `schema`, its logical types aside."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(normalize(schema)), value)
    return buffer.getvalue()


@st.composite
def corrupted(draw: Any, datum: bytes) -> bytes:
    """`datum` as it is, or truncated, with bytes after it, or with a byte changed."""
    how = draw(st.sampled_from(["same", "same", "same", "truncate", "append", "flip"]))
    if how == "truncate" and datum:
        return datum[:draw(st.integers(0, len(datum) - 1))]
    if how == "append":
        return datum + draw(st.binary(min_size=1, max_size=3))
    if how == "flip" and datum:
        at = draw(st.integers(0, len(datum) - 1))
        return datum[:at] + bytes([draw(st.integers(0, 255))]) + datum[at + 1:]
    return datum


# ---- evolution --------------------------------------------------------------------------------------

_DEFAULTS = [("long", 7), ("string", "x"), (["null", "string"], None), ("double", 1.5), ("boolean", True),
             ({"type": "array", "items": "int"}, [1, 2]), ({"type": "map", "values": "long"}, {"a": 1})]
_PROMOTE = {"int": ["long", "double"], "long": ["double"], "float": ["double"], "string": ["bytes"],
            "bytes": ["string"]}


@st.composite
def evolved(draw: Any, writer: dict[str, Any]) -> dict[str, Any]:
    """A reader schema for `writer` (a record): top-level fields dropped, added with defaults, promoted, enums
    with more symbols."""
    fields = []
    for f in writer["fields"]:
        t = f["type"]
        choice = draw(st.sampled_from(["keep", "keep", "drop", "change"]))
        if choice == "drop":
            continue
        if choice == "change" and isinstance(t, str) and t in _PROMOTE:
            t = draw(st.sampled_from(_PROMOTE[t]))
        elif choice == "change" and isinstance(t, dict) and t.get("type") == "enum" and "logicalType" not in t:
            t = {**t, "symbols": [*t["symbols"], "Z"]}
        fields.append({**f, "type": t})
    for i in range(draw(st.integers(0, 2))):
        t, default = draw(st.sampled_from(_DEFAULTS))
        fields.append({"name": f"added{i}", "type": t, "default": default})
    return {**writer, "fields": fields}


def text(schema: Any) -> str:
    return json.dumps(schema)

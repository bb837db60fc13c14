"""Random Avro writer schemas (every type, nested, named references, logical types, nullable and multi-branch
unions), raw datums with edge values, reader schemas that evolve a writer schema, and spark-avro's values of
fastavro's raw values as an oracle written apart from the codec's converters.

Everything draws from a `random.Random`: hypothesis's `st.randoms()` in the property test (shrinkable, replayed by
the suite's profile), a seeded one in the fuzz target's seeds. Named types carry an explicit namespace and are
referenced by full name, so a name means the same type in the writer and the reader schema.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import random
import struct
import uuid
from decimal import Context, Decimal
from typing import Any

import fastavro
import pyarrow as pa

from kafka_spark.formats.avro.types import normalize

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
LOGICAL = (
    {"type": "int", "logicalType": "date"}, {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"}, {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"}, {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"}, {"type": "string", "logicalType": "uuid"},
)
NAMESPACES = ("p", "a.b", "shop.v1")
_PROMOTE = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",),
            "string": ("bytes",), "bytes": ("string",)}
_TEXT = ("", "a", "é", "日本語", "😀", "\x00", "ÿ\u0100", "tab\tnew\nline", "z" * 40)
_INT32 = (0, 1, -1, (1 << 31) - 1, -(1 << 31), 63, 64, -65)
_INT64 = (0, -1, (1 << 63) - 1, -(1 << 63), (1 << 53) + 1, 1_700_000_000_000, -(1 << 40))
_FLOATS = (0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25)


class Skip(Exception):
    """The oracle has no single expected value here (a union Spark makes a struct of): the record decodes."""


class Refused(Skip):
    """A value spark-avro refuses (a decimal past its precision, a time past 64 bits): the record's error."""


class SchemaMaker:
    """Writer schemas and their evolved reader schemas; named types get unique names from one counter."""

    def __init__(self, rng: random.Random, multi_unions: float = 0.08) -> None:
        self.rng = rng
        self.multi_unions = multi_unions
        self.serial = itertools.count()
        self.defined: list[str] = []  # full names of the named types whose definition is complete

    def _name(self) -> dict[str, str]:
        return {"name": f"T{next(self.serial)}", "namespace": self.rng.choice(NAMESPACES)}

    def _done(self, node: dict[str, Any]) -> dict[str, Any]:
        self.defined.append(f"{node['namespace']}.{node['name']}")
        return node

    def top(self, depth: int = 3) -> dict[str, Any]:
        """A record of 1-5 fields: the writer schema of a value."""
        return self.record(depth, self.rng.randint(1, 5))

    def record(self, depth: int, fields: int) -> dict[str, Any]:
        node = {"type": "record", **self._name(),
                "fields": [{"name": f"f{i}", "type": self.node(depth - 1)} for i in range(fields)]}
        return self._done(node)

    def node(self, depth: int) -> Any:
        r = self.rng.random()
        if depth <= 0 or r < 0.4:
            return self.leaf()
        if r < 0.52:
            return self.record(depth, self.rng.randint(1, 3))
        if r < 0.64:
            return {"type": "array", "items": self.node(depth - 1)}
        if r < 0.74:
            return {"type": "map", "values": self.node(depth - 1)}
        if r < 0.88:
            inner = self.node(depth - 1)
            if isinstance(inner, list) or inner == "null":
                return inner
            return ["null", inner] if self.rng.random() < 0.7 else [inner, "null"]
        if r < 0.88 + self.multi_unions:
            return self.union(depth)
        return self.rng.choice(self.defined) if self.defined else self.leaf()

    def leaf(self) -> Any:
        r = self.rng.random()
        if r < 0.45:
            return self.rng.choice(PRIMITIVES[1:] if self.rng.random() < 0.95 else PRIMITIVES)
        if r < 0.65:
            return dict(self.rng.choice(LOGICAL))
        if r < 0.8:
            return self.decimal()
        if r < 0.9:
            symbols = self.rng.sample("ABCDEFGH", self.rng.randint(1, 5))
            return self._done({"type": "enum", **self._name(), "symbols": symbols})
        size = self.rng.choice((1, 2, 4, 8, 16)) if self.rng.random() < 0.97 else 0
        return self._done({"type": "fixed", **self._name(), "size": size})

    def decimal(self) -> dict[str, Any]:
        if self.rng.random() < 0.5:
            precision = self.rng.randint(1, 38)
            return {"type": "bytes", "logicalType": "decimal", "precision": precision,
                    "scale": self.rng.randint(0, precision)}
        size = self.rng.randint(1, 16)
        precision = self.rng.randint(1, min(38, len(str((1 << (8 * size - 1)) - 1)) - 1))
        return self._done({"type": "fixed", **self._name(), "size": size, "logicalType": "decimal",
                           "precision": precision, "scale": self.rng.randint(0, precision)})

    def union(self, depth: int) -> list[Any]:
        """2-4 branches, each base type once (Avro's rule), at most one array and one map, named types distinct."""
        members: list[Any] = []
        bases: set[str] = set()
        for _ in range(self.rng.randint(2, 4)):
            known = len(self.defined)
            member = self.node(depth - 1) if self.rng.random() < 0.4 else self.rng.choice(PRIMITIVES)
            base = "union" if isinstance(member, list) else member if isinstance(member, str) else member["type"]
            base = base if base in ("array", "map", "union") or base in PRIMITIVES else f"named:{member}"
            if base in bases or base == "union":
                del self.defined[known:]  # a member left out: the names it defined must not be referred to
                continue
            bases.add(base)
            members.append(member)
        for extra in PRIMITIVES:
            if len(members) > 1:
                break
            if extra not in bases:
                members.append(extra)
        return members

    # ---- evolution -------------------------------------------------------------------------------

    def evolve(self, node: Any, nullable: bool = False) -> Any:
        """A reader schema of `node`: fields dropped, added with defaults and reordered, promotions, enums with more
        symbols, a type made nullable (where `nullable`: not as a union's member), union branches added; named
        types keep their names. Not every result is valid Avro (a dropped field may hold the definition a later
        field refers to, an added branch may repeat a logical type's base): parse it before use."""
        if isinstance(node, str):
            if node in _PROMOTE and self.rng.random() < 0.3:
                return self.rng.choice(_PROMOTE[node])
            if node != "null" and nullable and self.rng.random() < 0.08:
                return ["null", node]
            return node
        if isinstance(node, list):
            members = [m if isinstance(m, str) else self.evolve(m) for m in node]
            free = [p for p in PRIMITIVES if p not in members]
            if free and self.rng.random() < 0.25:
                members.insert(self.rng.randint(0, len(members)), self.rng.choice(free))
            return members
        kind = node["type"]
        out = dict(node)
        if kind == "record":
            fields = [{**f, "type": self.evolve(f["type"], nullable=True)} for f in node["fields"]
                      if self.rng.random() > 0.15]
            for i in range(self.rng.choice((0, 0, 1, 2))):
                kind_, default = self.default()
                fields.append({"name": f"added{i}", "type": kind_, "default": default})
            if self.rng.random() < 0.3:
                self.rng.shuffle(fields)
            out["fields"] = fields or [{"name": "added", "type": "long", "default": -5}]
        elif kind == "array":
            out["items"] = self.evolve(node["items"], nullable=True)
        elif kind == "map":
            out["values"] = self.evolve(node["values"], nullable=True)
        elif kind == "enum" and self.rng.random() < 0.4:
            symbols = list(node["symbols"])
            symbols.insert(self.rng.randint(0, len(symbols)), "NEW")
            out["symbols"] = symbols
        if nullable and kind in ("array", "map") and self.rng.random() < 0.08:
            return [out, "null"]
        return out

    def default(self) -> tuple[Any, Any]:
        """(type, JSON default) of an added field."""
        choices: list[tuple[Any, Any]] = [
            ("long", 7), ("int", -(1 << 31)), ("string", "dé😀"), (["null", "string"], None), ("double", 1.5),
            ("float", -0.25), ("boolean", True), ("bytes", "\u00ff\u0000"), ({"type": "array", "items": "int"}, [1, 2]),
            ({"type": "map", "values": "long"}, {"a": 1}), ({"type": "int", "logicalType": "date"}, 19000),
            ({"type": "long", "logicalType": "timestamp-millis"}, 1_700_000_000_000),
            ({"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}, "\u0001\u0000"),
            ({"type": "string", "logicalType": "uuid"}, "00000000-0000-0000-0000-000000000001"),
            ({"type": "enum", **self._name(), "symbols": ["X", "Y"]}, "Y"),
            ({"type": "fixed", **self._name(), "size": 2}, "\u0001\u0002"),
            ({"type": "record", **self._name(), "fields": [{"name": "x", "type": "int"}]}, {"x": 3}),
        ]
        return self.rng.choice(choices)


# ---- datums -----------------------------------------------------------------------------------------

def names(schema: Any) -> dict[str, Any]:
    """Full name -> definition of every named type in `schema` (explicit namespaces, as SchemaMaker writes)."""
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for m in node:
                walk(m)
        elif isinstance(node, dict):
            if node["type"] in ("record", "enum", "fixed"):
                found[f"{node['namespace']}.{node['name']}"] = node
            for f in node.get("fields", ()):
                walk(f["type"])
            for key in ("items", "values"):
                if key in node:
                    walk(node[key])

    walk(schema)
    return found


def datum(rng: random.Random, node: Any, named: dict[str, Any]) -> Any:
    """A raw value of `node` (logical types aside, as fastavro writes the `normalize`d schema), edges often."""
    node = named.get(node, node) if isinstance(node, str) else node
    if isinstance(node, list):
        return datum(rng, rng.choice(node), named)
    kind = node if isinstance(node, str) else node["type"]
    logical = None if isinstance(node, str) else node.get("logicalType")
    edge = rng.random() < 0.3
    if kind == "null":
        return None
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice(_INT32) if edge else rng.randint(-5000, 5000)
    if kind == "long":
        if logical is not None and not edge:
            return rng.randint(-(1 << 41), 1 << 41)
        return rng.choice(_INT64) if edge else rng.randint(-(1 << 63), (1 << 63) - 1)
    if kind in ("float", "double"):
        if edge:
            return rng.choice(_FLOATS)
        fmt = "<f" if kind == "float" else "<d"
        return struct.unpack(fmt, rng.randbytes(struct.calcsize(fmt)))[0]  # any bits: NaN payloads, subnormals
    if kind == "string":
        if logical == "uuid" and not edge:
            return str(uuid.UUID(int=rng.getrandbits(128)))
        return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 3)))
    if kind in ("bytes", "fixed"):
        size = node["size"] if kind == "fixed" else rng.choice((0, 1, 3, 17))
        if logical == "decimal":
            return _unscaled(rng, node, size if kind == "fixed" else None)
        return rng.randbytes(size)
    if kind == "enum":
        return rng.choice(node["symbols"])
    if kind == "array":
        return [datum(rng, node["items"], named) for _ in range(rng.choice((0, 1, 2, 4)))]
    if kind == "map":
        keys = dict.fromkeys("".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 2)))
                             for _ in range(rng.choice((0, 1, 3))))
        return {k: datum(rng, node["values"], named) for k in keys}
    return {f["name"]: datum(rng, f["type"], named) for f in node["fields"]}


def _unscaled(rng: random.Random, node: dict[str, Any], size: int | None) -> bytes:
    limit = 10 ** node["precision"]
    value = rng.choice((0, 1, -1, limit - 1, -(limit - 1))) if rng.random() < 0.4 else rng.randrange(1 - limit, limit)
    if size is None:
        if value == 0 and rng.random() < 0.5:
            return b""  # zero in no bytes: Java's BigInteger refuses it, fastavro reads 0
        return value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
    return value.to_bytes(size, "big", signed=True)


def parsed(schema: Any) -> Any:
    return fastavro.parse_schema(normalize(json.loads(json.dumps(schema))), named_schemas={})


def encode(schema: Any, value: Any) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed(schema), value)
    return buffer.getvalue()


def corrupt(rng: random.Random, payload: bytes) -> bytes:
    """`payload` truncated, with bytes after it, or with a byte changed."""
    how = rng.randrange(3)
    if how == 0 and payload:
        return payload[:rng.randrange(len(payload))]
    if how == 1 or not payload:
        return payload + rng.randbytes(rng.randint(1, 3))
    at = rng.randrange(len(payload))
    return payload[:at] + bytes([rng.randrange(256)]) + payload[at + 1:]


# ---- equality and the oracle -------------------------------------------------------------------------------------

def comparable(arr: pa.Array) -> list[Any]:
    """The rows of `arr` as Python values that compare as the columns should: temporal values as their integers
    (to_pylist would refuse some, and rounds none), floats as (value, sign of zero) with every NaN one value."""
    t = arr.type
    valid = arr.is_valid().to_pylist()
    if pa.types.is_floating(t):
        return [None if v is None else "NaN" if math.isnan(v) else (v, math.copysign(1.0, v))
                for v in arr.to_pylist()]
    if pa.types.is_temporal(t):
        return arr.view(pa.int32() if t.bit_width == 32 else pa.int64()).to_pylist()
    if pa.types.is_struct(t):
        children = [comparable(c) for c in arr.flatten()]
        return [dict(zip([f.name for f in t], row, strict=True)) if ok else None
                for ok, row in zip(valid, zip(*children, strict=True) if children else [()] * len(arr), strict=True)]
    if pa.types.is_map(t):
        offsets = arr.offsets.to_numpy()
        keys, items = comparable(arr.keys), comparable(arr.items)
        return [list(zip(keys[a:b], items[a:b], strict=True)) if ok else None
                for ok, a, b in zip(valid, offsets[:-1], offsets[1:], strict=True)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = arr.offsets.to_numpy()
        values = comparable(arr.values)
        return [values[a:b] if ok else None for ok, a, b in zip(valid, offsets[:-1], offsets[1:], strict=True)]
    return arr.to_pylist()


def expected(value: Any, node: Any, named: dict[str, Any]) -> Any:
    """The row `comparable` gives for spark-avro's value of `value`, a raw value fastavro read with the reader
    schema `node` (after `normalize`): Skip where no single answer exists."""
    node = named.get(node, node) if isinstance(node, str) else node
    if value is None:
        return None
    if isinstance(node, list):
        rest = [m for m in node if m != "null"]
        bases = sorted(m if isinstance(m, str) else "?" for m in rest)
        if len(rest) == 1:
            return expected(value, rest[0], named)
        if bases == ["int", "long"]:
            return value
        if bases == ["double", "float"]:
            return _float(value)
        for member in rest:  # the branch read is not known here: a refusal by any that takes the value counts
            try:
                expected(value, member, named)
            except Refused:
                raise
            except Exception:
                pass
        raise Skip("a union Spark makes a struct of")
    kind = node if isinstance(node, str) else node["type"]
    logical = None if isinstance(node, str) else node.get("logicalType")
    if kind == "float":
        # a float read as itself is exact already; an int or long promoted to float is rounded to 32 bits
        return _float(struct.unpack("<f", struct.pack("<f", value))[0] if math.isfinite(value) else value)
    if kind == "double":
        return _float(float(value))
    if kind in ("bytes", "fixed") and isinstance(value, str):
        value = value.encode("latin-1")  # fastavro gives a default as its JSON: Avro's bytes are code points 0-255
    if logical == "decimal" and kind in ("bytes", "fixed"):
        unscaled = int.from_bytes(value, "big", signed=True)
        if abs(unscaled) >= 10 ** node["precision"]:
            raise Refused("a decimal past its precision")
        return Decimal(unscaled).scaleb(-node.get("scale", 0), Context(prec=80))  # the default context rounds to 28
    factor = {"timestamp-millis": 1000, "local-timestamp-millis": 1000, "time-micros": 1000}.get(logical or "", 1)
    if kind == "long" and factor > 1:
        if not -(1 << 63) <= value * factor < 1 << 63:
            raise Refused("a time past 64 bits")
        return value * factor
    if kind == "array":
        return _each([(x, node["items"]) for x in value], named)
    if kind == "map":
        return list(zip(value, _each([(v, node["values"]) for v in value.values()], named), strict=True))
    if kind == "record":
        fields = node["fields"]
        return dict(zip([f["name"] for f in fields], _each([(value[f["name"]], f["type"]) for f in fields], named),
                        strict=True))
    return value


def _each(pairs: list[tuple[Any, Any]], named: dict[str, Any]) -> list[Any]:
    """The expected values of (value, node) pairs; a Refused by any of them wins over a Skip by an earlier one."""
    out: list[Any] = []
    skipped: Skip | None = None
    for value, node in pairs:
        try:
            out.append(expected(value, node, named))
        except Refused:
            raise
        except Skip as exc:
            skipped = exc
    if skipped is not None:
        raise skipped
    return out


def _float(value: float) -> Any:
    # NaNs are one value here (their payload bits are not Spark's to keep); zeros keep their sign
    return "NaN" if math.isnan(value) else (value, math.copysign(1.0, value))

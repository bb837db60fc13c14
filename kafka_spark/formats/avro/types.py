"""spark-avro's type mapping (Spark 4.2 `SchemaConverters`) between Avro schemas and Arrow types, both ways, and
the converters that turn the raw values fastavro reads into values of the mapped Arrow type.

Schemas here are fastavro-parsed (full names, named types listed in `named`) after `normalize`, which hides
the logical types fastavro would apply itself: values arrive raw (ints for dates and timestamps, bytes for
decimals) and are converted by the *reader's* logical types, as Java Avro and Spark do.
"""

from __future__ import annotations

import decimal
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_spark.errors import ConfigError, PayloadError

Convert = Callable[[Any], Any]

# Where `normalize` moves a logical type that fastavro must not apply (it keeps unknown properties).
LOGICAL = "kafkaSpark.logicalType"
CATALYST_TYPE = "spark.sql.catalyst.type"
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
_OWN_TYPES = PRIMITIVES | NAMED | {"array", "map"}
MAX_DEPTH_LIMIT = 15  # spark-avro's limit on recursiveFieldMaxDepth
MAX_PRECISION = 38  # Spark's DecimalType
_INT64 = (-(1 << 63), (1 << 63) - 1)
_INTERVAL = re.compile(r"\s*interval\s+(day|hour|minute|second)(\s+to\s+(day|hour|minute|second))?\s*", re.I)
# 38-digit decimals scale exactly in this context (the default one keeps 28 digits)
_DECIMALS = decimal.Context(prec=80)
_F32 = struct.Struct("<f")
_INF = float("inf")


@dataclass(frozen=True)
class AvroOptions:
    """spark-avro's options that change the mapping (`recursiveFieldMaxDepth`,
    `enableStableIdentifiersForUnionType`, `stableIdentifierPrefixForUnionType`)."""

    recursive_field_max_depth: int = -1
    stable_union_ids: bool = False
    stable_union_prefix: str = "member_"


def avro_options(options: Mapping[str, str] | None) -> AvroOptions:
    """The spark-avro options in `options` (names in any case; other keys belong to other codecs and are
    ignored); ConfigError for a bad value."""
    opts = {k.lower(): str(v).strip() for k, v in (options or {}).items() if v is not None}
    depth_text = opts.get("recursivefieldmaxdepth", "-1")
    try:
        depth = int(depth_text)
    except ValueError:
        raise ConfigError(f"option 'recursiveFieldMaxDepth' must be an integer, got {depth_text!r}") from None
    if depth > MAX_DEPTH_LIMIT:
        raise ConfigError(f"option 'recursiveFieldMaxDepth' must not be greater than {MAX_DEPTH_LIMIT}, got {depth}")
    stable_text = opts.get("enablestableidentifiersforuniontype", "false").lower()
    if stable_text not in ("true", "false"):
        raise ConfigError(f"option 'enableStableIdentifiersForUnionType' must be true or false, got {stable_text!r}")
    return AvroOptions(depth, stable_text == "true", opts.get("stableidentifierprefixforuniontype", "member_"))


def day_time_interval(node: Mapping[str, Any]) -> bool:
    """Whether a long is one of Spark's day-time intervals (microseconds), as spark-avro marks them."""
    text = node.get(CATALYST_TYPE)
    return node.get("type") == "long" and isinstance(text, str) and _INTERVAL.fullmatch(text) is not None


# ---- schema normalization -----------------------------------------------------------------------

def valid_decimal(node: Mapping[str, Any], base: str) -> bool:
    """Whether a decimal logical type is one Java Avro accepts (it ignores invalid ones, leaving the bytes)."""
    precision, scale = node.get("precision"), node.get("scale", 0)
    if type(precision) is not int or type(scale) is not int or not 0 <= scale <= precision or precision < 1:
        return False
    if base == "fixed":
        size = node.get("size")
        return type(size) is int and size >= 1 and precision <= len(str((1 << (8 * size - 1)) - 1)) - 1
    return base == "bytes"


def normalize(node: Any, keep: frozenset[tuple[str, str]] = frozenset()) -> Any:
    """A copy of a JSON schema whose logical types are moved to `LOGICAL`, except the (type, logicalType)
    pairs in `keep` (decimals only when valid); defaults and other properties are left as they are."""
    if isinstance(node, list):
        return [normalize(member, keep) for member in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    kind = node.get("type")
    if "logicalType" in out:
        pair = (kind, out["logicalType"])
        if pair not in keep or (pair[1] == "decimal" and not valid_decimal(node, str(kind))):
            out[LOGICAL] = out.pop("logicalType")
    if kind in ("record", "error") and isinstance(node.get("fields"), list):
        out["fields"] = [{**f, "type": normalize(f.get("type"), keep)} if isinstance(f, dict) else f
                         for f in node["fields"]]
    elif kind == "array" and "items" in node:
        out["items"] = normalize(node["items"], keep)
    elif kind == "map" and "values" in node:
        out["values"] = normalize(node["values"], keep)
    elif isinstance(kind, (dict, list)):
        out["type"] = normalize(kind, keep)
    return out


def definition(node: Any, named: Mapping[str, Any]) -> Any:
    """A parsed schema node with named references and `{"type": <schema>}` wrappers followed to what they stand
    for: a primitive's name, a union's list, or a dict whose type is a named or complex type's own."""
    while True:
        if isinstance(node, str) and node not in PRIMITIVES:
            node = named[node]
        elif isinstance(node, dict) and not (isinstance(node.get("type"), str) and node["type"] in _OWN_TYPES):
            node = node.get("type")
        else:
            return node


def base_type(node: Any, named: Mapping[str, Any]) -> str:
    """The Avro type `node` stands for ("int", "record", "union", ...), logical types aside."""
    found = definition(node, named)
    if isinstance(found, list):
        return "union"
    return found if isinstance(found, str) else str(found["type"])


def named_type(node: Any, named: Mapping[str, Any]) -> str | None:
    """The full name of the named type (record, enum, fixed) `node` stands for, else None."""
    found = definition(node, named)
    return str(found["name"]) if isinstance(found, dict) and found["type"] in NAMED else None


# ---- Avro -> Arrow (reading) ---------------------------------------------------------------------

@dataclass(frozen=True)
class _Branch:
    """What fastavro gives for one Avro type, to tell the members of a union apart: the Python type of the raw
    value and what narrows it (a named type's full name, an int's or float's width in bits, a record's field
    names, a fixed's size); `rank` orders same-kind members from the most to the least specific."""

    kind: type
    name: str | None = None
    bits: int = 64
    keys: frozenset[str] | None = None
    size: int | None = None
    rank: int = 0

    def accepts(self, value: Any) -> bool:
        if self.kind is int and self.bits == 32:
            return -(1 << 31) <= value < (1 << 31)
        if self.kind is float and self.bits == 32:
            if value != value or value in (_INF, -_INF):
                return True
            return bool(_F32.unpack(_F32.pack(value))[0] == value) if abs(value) < 3.4e38 else False
        if self.keys is not None:
            return self.keys == value.keys()
        if self.size is not None:
            return len(value) == self.size
        return True


@dataclass(frozen=True)
class _Mapped:
    arrow: pa.DataType
    convert: Convert | None
    branch: _Branch


@dataclass(frozen=True)
class ReaderMapping:
    """A reader schema's Arrow type; `convert` turns a fastavro value (not None) into a value of that type (None
    when it already is one); `named_types` says fastavro must be asked for (name, value) pairs of named types
    in unions (fastavro's `return_named_type`), without which some union members cannot be told apart."""

    arrow_type: pa.DataType
    convert: Convert | None
    named_types: bool


def reader_mapping(schema: Any, named: Mapping[str, Any], options: AvroOptions) -> ReaderMapping:
    """spark-avro's `SchemaConverters.toSqlType` of a parsed reader schema, as Arrow with every field nullable
    (the Spark schema declared for it is nullable throughout), and the converter of its values.

    ConfigError when Spark refuses the schema: recursion without `recursiveFieldMaxDepth`, a decimal beyond 38
    digits, clashing stable union member names, a `spark.sql.catalyst.type` property Arrow has no type for.
    """
    plain = _ReaderWalk(named, options, named_types=False)
    mapped = plain.walk(schema, {})
    if plain.ambiguous_names:
        mapped = _ReaderWalk(named, options, named_types=True).walk(schema, {})
    assert mapped is not None  # only a recursive record below the top can be dropped
    return ReaderMapping(mapped.arrow, mapped.convert, plain.ambiguous_names)


class _ReaderWalk:
    def __init__(self, named: Mapping[str, Any], options: AvroOptions, named_types: bool) -> None:
        self.named = named
        self.options = options
        self.named_types = named_types
        self.ambiguous_names = False

    def walk(self, node: Any, seen: dict[str, int]) -> _Mapped | None:
        if isinstance(node, list):
            return self._union(node, seen)
        if isinstance(node, str):
            return self._primitive({}, node) if node in PRIMITIVES else self.walk(self._named(node), seen)
        kind = node.get("type")
        if isinstance(kind, (dict, list)):
            return self.walk(kind, seen)
        if kind in ("record", "error"):
            return self._record(node, seen)
        if kind == "enum":
            return self._unwrapping(_Mapped(pa.string(), None, _Branch(str, name=node["name"], rank=1)))
        if kind == "fixed":
            return self._fixed(node)
        if kind == "array":
            items = self.walk(node["items"], seen)
            if items is None:
                return None
            return _Mapped(pa.list_(items.arrow), _each(items.convert), _Branch(list))
        if kind == "map":
            values = self.walk(node["values"], seen)
            if values is None:
                return None
            return _Mapped(pa.map_(pa.string(), values.arrow), _each_value(values.convert), _Branch(dict, rank=1))
        if kind in PRIMITIVES:
            return self._primitive(node, kind)
        return self.walk(self._named(kind), seen)

    def _named(self, name: Any) -> Any:
        found = self.named.get(name)
        if found is None:
            raise ConfigError(f"Avro schema names an unknown type {name!r}")
        return found

    def _primitive(self, node: Mapping[str, Any], kind: str) -> _Mapped:
        logical = node.get(LOGICAL)
        if kind == "int":
            # fastavro reads an int as a long: a corrupt one can exceed 32 bits, and fail the whole column
            if logical == "date":
                return _Mapped(pa.date32(), _int32, _Branch(int, bits=32))
            return self._catalyst(node) or _Mapped(pa.int32(), _int32, _Branch(int, bits=32))
        if kind == "long":
            if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
                arrow = pa.timestamp("us", tz=None if logical.startswith("local") else "UTC")
                return _Mapped(arrow, _scaled(1000) if logical.endswith("millis") else None, _Branch(int))
            if logical == "time-micros":
                # Spark 4.2 reads it as TIME(6), which PySpark carries in Arrow as nanoseconds of the day
                return _Mapped(pa.time64("ns"), _scaled(1000), _Branch(int))
            return self._catalyst(node) or _Mapped(pa.int64(), None, _Branch(int))
        if kind == "bytes" and logical == "decimal" and valid_decimal(node, "bytes"):
            return _Mapped(_decimal_type(node), _decimal(node), _Branch(bytes))
        return _SIMPLE[kind]

    def _catalyst(self, node: Mapping[str, Any]) -> _Mapped | None:
        # spark-avro writes Spark's interval types as int/long with the Catalyst type in this property
        text = node.get(CATALYST_TYPE)
        if text is None:
            return None
        if day_time_interval(node):
            return _Mapped(pa.duration("us"), None, _Branch(int))
        raise ConfigError(f"Avro {node.get('type')} with {CATALYST_TYPE}={text!r}: no Arrow type is known for it")

    def _fixed(self, node: Mapping[str, Any]) -> _Mapped:
        branch = _Branch(bytes, name=node["name"], size=node.get("size"), rank=1)
        if node.get(LOGICAL) == "decimal" and valid_decimal(node, "fixed"):
            return self._unwrapping(_Mapped(_decimal_type(node), _decimal(node), branch))
        return self._unwrapping(_Mapped(pa.binary(), None, branch))

    def _record(self, node: Mapping[str, Any], seen: dict[str, int]) -> _Mapped | None:
        name = node["name"]
        depth = seen.get(name, 0)
        limit = self.options.recursive_field_max_depth
        if depth > 0 and limit <= 0:
            raise ConfigError(
                f"Avro record {name!r} refers to itself, which Spark cannot hold by default: set the option "
                f"'recursiveFieldMaxDepth' to 1-{MAX_DEPTH_LIMIT} to keep that many levels")
        if depth > 0 and depth >= limit:
            return None
        inner = {**seen, name: depth + 1}
        fields: list[pa.Field] = []
        converts: list[tuple[str, Convert]] = []
        for f in node["fields"]:
            mapped = self.walk(f["type"], inner)
            if mapped is None:
                continue
            fields.append(pa.field(f["name"], mapped.arrow))
            if mapped.convert is not None:
                converts.append((f["name"], mapped.convert))
        branch = _Branch(dict, name=name, keys=frozenset(f["name"] for f in node["fields"]))
        return self._unwrapping(_Mapped(pa.struct(fields), _fields(converts), branch))

    def _unwrapping(self, mapped: _Mapped) -> _Mapped:
        # With (name, value) pairs asked for, any named type may arrive as one where the writer had a union.
        if not self.named_types:
            return mapped
        return _Mapped(mapped.arrow, _unwrap(mapped.convert), mapped.branch)

    def _union(self, members: list[Any], seen: dict[str, int]) -> _Mapped | None:
        rest = [m for m in members if self._base(m) != "null"]
        if len(rest) == 1:
            return self.walk(rest[0], seen)
        bases = sorted(self._base(m) for m in rest)
        if bases == ["int", "long"]:
            return _Mapped(pa.int64(), None, _Branch(int))
        if bases == ["double", "float"]:
            return _Mapped(pa.float64(), None, _Branch(float))
        mapped: list[tuple[str, _Mapped]] = []
        taken: set[str] = set()
        for i, member in enumerate(rest):
            m = self.walk(member, seen)
            if m is None:
                continue
            name = f"member{i}"
            if self.options.stable_union_ids:
                name = self.options.stable_union_prefix + self._simple_name(member)
                if name.lower() in taken:
                    raise ConfigError(f"Cannot generate stable identifier for Avro union type due to name "
                                      f"conflict of type name {self._simple_name(member)}")
                taken.add(name.lower())
            mapped.append((name, m))
        for kind in {m.branch.kind for _, m in mapped}:
            same = [m.branch for _, m in mapped if m.branch.kind is kind]
            if len(same) > 1 and any(b.name for b in same):
                self.ambiguous_names = True
        arrow = pa.struct([pa.field(name, m.arrow) for name, m in mapped])
        return _Mapped(arrow, _members(mapped), _Branch(dict, rank=2))

    def _base(self, node: Any) -> str:
        return base_type(node, self.named)

    def _simple_name(self, node: Any) -> str:
        # Java Avro's Schema.getName(): a named type's name without its namespace, else the type's own name
        full = named_type(node, self.named)
        return self._base(node) if full is None else full.rsplit(".", 1)[-1]


def _int32(value: int) -> int:
    if -(1 << 31) <= value < (1 << 31):
        return value
    raise PayloadError(f"int {value} does not fit 32 bits")


_SIMPLE: dict[str, _Mapped] = {
    "null": _Mapped(pa.null(), None, _Branch(type(None))),
    "boolean": _Mapped(pa.bool_(), None, _Branch(bool)),
    "int": _Mapped(pa.int32(), _int32, _Branch(int, bits=32)),
    "long": _Mapped(pa.int64(), None, _Branch(int)),
    "float": _Mapped(pa.float32(), None, _Branch(float, bits=32)),
    "double": _Mapped(pa.float64(), None, _Branch(float)),
    "bytes": _Mapped(pa.binary(), None, _Branch(bytes)),
    "string": _Mapped(pa.string(), None, _Branch(str)),
}


def _decimal_type(node: Mapping[str, Any]) -> pa.DataType:
    precision, scale = node["precision"], node.get("scale", 0)
    if precision > MAX_PRECISION:
        raise ConfigError(f"Avro decimal({precision}, {scale}) has more digits than Spark's limit of {MAX_PRECISION}")
    return pa.decimal128(precision, scale)


def _decimal(node: Mapping[str, Any]) -> Convert:
    precision, scale = node["precision"], node.get("scale", 0)
    limit = 10 ** precision

    def convert(raw: bytes) -> decimal.Decimal:
        unscaled = int.from_bytes(raw, "big", signed=True)
        if -limit < unscaled < limit:
            return decimal.Decimal(unscaled).scaleb(-scale, _DECIMALS)
        raise PayloadError(f"decimal {unscaled}E-{scale} does not fit decimal({precision}, {scale})")

    return convert


def _scaled(factor: int) -> Convert:
    low, high = _INT64[0] // factor, _INT64[1] // factor

    def convert(value: int) -> int:
        if low <= value <= high:
            return value * factor
        raise PayloadError(f"{value} times {factor} overflows 64 bits")

    return convert


def _each(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda items: [None if x is None else convert(x) for x in items]


def _each_value(convert: Convert | None) -> Convert | None:
    if convert is None:
        return None
    return lambda entries: {k: None if v is None else convert(v) for k, v in entries.items()}


def _fields(converts: list[tuple[str, Convert]]) -> Convert | None:
    if not converts:
        return None
    # int fields are only checked, inline: a call per field would cost more than fastavro's read of it
    ints = tuple(name for name, fn in converts if fn is _int32)
    pairs = tuple((name, fn) for name, fn in converts if fn is not _int32)
    low, high = -(1 << 31), (1 << 31) - 1

    def convert(record: dict[str, Any]) -> dict[str, Any]:
        for name in ints:
            value = record[name]
            if value is not None and not low <= value <= high:
                _int32(value)
        for name, fn in pairs:
            value = record[name]
            if value is not None:
                record[name] = fn(value)
        return record

    return convert


def _unwrap(convert: Convert | None) -> Convert:
    def unwrap(value: Any) -> Any:
        if type(value) is tuple:
            value = value[1]
        return value if convert is None else convert(value)

    return unwrap


def _members(mapped: list[tuple[str, _Mapped]]) -> Convert:
    """A union's value -> {memberN: value of the member it belongs to, other members None}."""
    names = [name for name, _ in mapped]
    converts = [m.convert for _, m in mapped]
    by_name = {m.branch.name: i for i, (_, m) in enumerate(mapped) if m.branch.name}
    by_kind: dict[type, list[tuple[int, _Branch]]] = {}
    for i, (_, m) in enumerate(mapped):
        by_kind.setdefault(m.branch.kind, []).append((i, m.branch))
    for same in by_kind.values():
        same.sort(key=lambda pair: (pair[1].rank, pair[1].bits))

    def member(value: Any) -> tuple[int, Any]:
        if type(value) is tuple:
            return by_name[value[0]], value[1]
        same = by_kind.get(type(value))
        if not same:
            raise PayloadError(f"a {type(value).__name__} value fits no member of the union")
        for i, branch in same:
            if branch.accepts(value):
                return i, value
        return same[0][0], value

    def convert(value: Any) -> dict[str, Any]:
        i, value = member(value)
        out = dict.fromkeys(names)
        fn = converts[i]
        out[names[i]] = value if fn is None else fn(value)
        return out

    return convert

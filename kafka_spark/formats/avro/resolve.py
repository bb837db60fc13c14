"""Avro schema resolution in Arrow: a column read with the writer's schema (as DataFusion gives it) made into
the column the per-record path builds for the query's reader schema (`types.reader_mapping`'s Arrow type).

Resolved here: records by field name (writer fields the reader lacks dropped, reader fields the writer lacks
filled with the value the per-record path gives them, taken from `sample`, the first record as that path
decoded it), nullable unions, arrays, maps, enums whose writer symbols the reader has, fixed, the promotions
int→long, int/long→double, float→double, string↔bytes, and the logical types the per-record path converts
(date, timestamps, time-micros, decimal). Everything else raises `Unsupported`, and the per-record path takes
the whole group: multi-branch unions, aliases, a logical type that differs between writer and reader, promotions
to float, spark-avro's interval properties.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.formats.avro.types import CATALYST_TYPE, LOGICAL, definition, valid_decimal


class Unsupported(Exception):
    """The block path cannot give exactly the per-record path's column for this schema pair."""


_TIME_FACTOR = {"timestamp-millis": 1000, "local-timestamp-millis": 1000, "time-micros": 1000}
_PROMOTIONS = {("int", "long"), ("int", "double"), ("long", "double"), ("float", "double"),
               ("string", "bytes"), ("bytes", "string")}


class Resolver:
    """Resolves columns of one writer schema to one reader schema (both fastavro-parsed, with named types)."""

    def __init__(self, writer_named: Mapping[str, Any], reader_named: Mapping[str, Any]) -> None:
        self.wn = writer_named
        self.rn = reader_named

    def top(self, table: pa.Table, writer: Any, reader: Any, target: pa.DataType, sample: Any) -> pa.Array:
        """The reader's column from DataFusion's table of a record writer schema (one column per field)."""
        node = definition(writer, self.wn)
        if not isinstance(node, dict) or node["type"] not in ("record", "error") or not node["fields"]:
            raise Unsupported("the writer schema is not a record with fields")
        names = [f["name"] for f in node["fields"]]
        if table.column_names != names:
            raise Unsupported(f"the reader gave columns {table.column_names}, not {names}")
        record = pa.StructArray.from_arrays([c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                                             for c in table.columns], names=names)
        return self.resolve(record, writer, reader, target, sample)

    def resolve(self, arr: pa.Array, writer: Any, reader: Any, target: pa.DataType, sample: Any) -> pa.Array:
        w, r = definition(writer, self.wn), definition(reader, self.rn)
        if isinstance(r, list):
            return self.resolve(arr, _only_branch(w, self.wn) if isinstance(w, list) else writer,
                                _only_branch(r, self.rn), target, sample)
        if isinstance(w, list):
            raise Unsupported("a writer union read as a reader non-union")
        w_kind, r_kind = _kind(w), _kind(r)
        if w_kind in ("record", "error") and r_kind == w_kind:
            return self._record(arr, w, r, target, sample)
        if (w_kind, r_kind) in (("array", "array"), ("map", "map")):
            return self._repeated(arr, w, r, target)
        if w_kind == "enum" and r_kind == "enum":
            if w["name"] != r["name"] or not set(w["symbols"]) <= set(r["symbols"]) or target != pa.string():
                raise Unsupported("enum names or symbols differ")
            if not pa.types.is_dictionary(arr.type):
                raise Unsupported(f"an enum read as {arr.type}")
            return arr.dictionary_decode().cast(pa.string())
        if w_kind == "fixed" and r_kind == "fixed" and (w["name"] != r["name"] or w["size"] != r["size"]):
            raise Unsupported("fixed names or sizes differ")
        return self._leaf(arr, w, r, w_kind, r_kind, target)

    def _record(self, arr: pa.Array, w: Mapping[str, Any], r: Mapping[str, Any], target: pa.DataType,
                sample: Any) -> pa.Array:
        if w["name"] != r["name"] or not pa.types.is_struct(target) or not pa.types.is_struct(arr.type):
            raise Unsupported("record names or types differ")
        written = {f["name"]: f for f in w["fields"]}
        fields = {f["name"]: f for f in r["fields"]}
        children = []
        for tf in target:
            rf = fields[tf.name]
            wf = written.get(tf.name)
            inner = sample.get(tf.name) if isinstance(sample, dict) else None
            if wf is None:
                if rf.get("aliases") or "default" not in rf or not isinstance(sample, dict):
                    raise Unsupported(f"reader field {tf.name!r} without a usable default")
                children.append(pa.array([inner], tf.type).take(np.zeros(len(arr), np.int64)))
            else:
                child = arr.field(arr.type.get_field_index(tf.name))
                children.append(self.resolve(child, wf["type"], rf["type"], tf.type, inner))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(arr))

    def _repeated(self, arr: pa.Array, w: Mapping[str, Any], r: Mapping[str, Any], target: pa.DataType) -> pa.Array:
        offsets = np.asarray(arr.offsets, dtype=np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        if last >= 1 << 31:
            raise Unsupported("more items than 32-bit offsets hold")
        shifted = pa.array(offsets - first, pa.int32())
        mask = _nulls(arr)
        if w["type"] == "array":
            if not (pa.types.is_list(target) and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type))):
                raise Unsupported(f"an array read as {arr.type}")
            items = self.resolve(arr.values.slice(first, last - first), w["items"], r["items"],
                                 target.value_type, None)
            return pa.ListArray.from_arrays(shifted, items, type=target, mask=mask)
        if not (pa.types.is_map(target) and pa.types.is_map(arr.type)):
            raise Unsupported(f"a map read as {arr.type}")
        keys = arr.keys.slice(first, last - first).cast(pa.string())
        _unique_keys(offsets - first, keys)
        values = self.resolve(arr.items.slice(first, last - first), w["values"], r["values"], target.item_type, None)
        return pa.MapArray.from_arrays(shifted, keys, values, type=target, mask=mask)

    def _leaf(self, arr: pa.Array, w: Any, r: Any, w_kind: str, r_kind: str, target: pa.DataType) -> pa.Array:
        w_logical, r_logical = _logical(w, w_kind), _logical(r, r_kind)
        if w_logical != r_logical or _catalyst(w) or _catalyst(r):
            raise Unsupported("logical types differ")
        if w_kind != r_kind:
            if (w_kind, r_kind) not in _PROMOTIONS or w_logical is not None:
                raise Unsupported(f"{w_kind} read as {r_kind}")
            # fastavro promotes the Python value (int(), float()), as Arrow's casts of whole columns do
            return arr.cast(target, safe=False) if r_kind == "double" else arr.cast(target)
        expected = _READ_AS.get(w_kind)
        if expected is None or not expected(arr.type):
            raise Unsupported(f"{w_kind} read as {arr.type}")
        name = None if w_logical is None else w_logical[0]
        if name == "decimal":
            return _decimal(arr, w, target)
        if pa.types.is_date32(target) and name == "date":
            return arr.cast(pa.int32()).cast(target)
        if pa.types.is_timestamp(target) or pa.types.is_time64(target):
            factor = _TIME_FACTOR.get(name or "")
            scaled = arr if factor is None else pc.multiply_checked(arr, pa.scalar(factor, pa.int64()))
            return pa.Array.from_buffers(target, len(scaled), scaled.buffers(), scaled.null_count, scaled.offset)
        if w_kind == "null":
            return pa.nulls(len(arr), target)
        return arr.cast(target)


def _unique_keys(offsets: np.ndarray, keys: pa.Array) -> None:
    """ValueError when one map holds a key twice (no common encoder writes it, but the bytes can say it): the
    per-record path keeps the key once with its last value, as a dict (and Java's HashMap) does, where the
    reader keeps every entry; the group is then decoded per record."""
    lengths = np.diff(offsets)
    longest = int(lengths.max(initial=0))
    if longest < 2:
        return
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    if longest <= 16:  # short maps (most): each entry against the few before it, no sort
        twice = any(((codes[j:] == codes[:-j]) & (owner[j:] == owner[:-j])).any() for j in range(1, longest))
    else:  # (map, key) pairs sorted, at most 2^31 of each (the product fits 63 bits); grouped by map already,
        # they are runs that the stable sort (timsort) merges fast
        pairs = np.sort(owner * (int(codes.max()) + 1) + codes, kind="stable")
        twice = bool((pairs[1:] == pairs[:-1]).any())
    if twice:
        raise ValueError("a map holds a key twice")


def _only_branch(members: list[Any], named: Mapping[str, Any]) -> Any:
    rest = [m for m in members if _kind(definition(m, named)) != "null"]
    if len(rest) != 1:
        raise Unsupported("a union of more than null and one type")
    return rest[0]


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    return node if isinstance(node, str) else str(node["type"])


def _logical(node: Any, kind: str) -> tuple[Any, ...] | None:
    """The logical type the per-record path applies to `node` (a valid decimal with its digits), or None."""
    if not isinstance(node, dict) or LOGICAL not in node:
        return None
    name = node[LOGICAL]
    if name == "decimal":
        return ("decimal", node["precision"], node.get("scale", 0)) if valid_decimal(node, kind) else None
    return (name,)


def _catalyst(node: Any) -> bool:
    return isinstance(node, dict) and CATALYST_TYPE in node


def _nulls(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _decimal(arr: pa.Array, w: Mapping[str, Any], target: pa.DataType) -> pa.Array:
    if arr.type != target:
        raise Unsupported(f"a decimal read as {arr.type}, not {target}")
    if len(arr) - arr.null_count:
        # the reader keeps digits past the precision; the per-record path refuses such a value
        bounds = pc.min_max(arr)
        limit = decimal.Decimal(10 ** w["precision"]).scaleb(-w.get("scale", 0))
        if not (-limit < bounds["min"].as_py() and bounds["max"].as_py() < limit):
            raise ValueError("a decimal beyond its precision")
    return arr


def _binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


def _text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


_READ_AS = {
    "null": pa.types.is_null, "boolean": pa.types.is_boolean,
    "int": lambda t: t == pa.int32(), "long": lambda t: t == pa.int64(),
    "float": lambda t: t == pa.float32(), "double": lambda t: t == pa.float64(),
    "bytes": lambda t: _binary(t) or pa.types.is_decimal(t), "string": _text,
    "fixed": lambda t: pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t),
}

"""The fast path of `SparkJson`: values decoded by msgspec straight into typed objects, then into Arrow columns.

msgspec decodes each value (bytes) against types made from the schema, validating as it goes, and where it
and Spark's `from_json` could disagree it refuses (the caller then writes the batch through Spark's own):

- only strict JSON: no NaN or Infinity, no trailing text, valid UTF-8, no lone surrogate;
- a field's value must have its JSON type: a string for `STRING`, a number for numbers (an integer for the
  integral types), true/false for `BOOLEAN`; a field given twice is checked every time and the last one
  kept, as Spark does; fields the schema lacks are skipped unchecked, as Spark skips them;
- integers outside their type's range, decimals that need rounding and `FLOAT`s halfway between two floats
  are found per column afterwards (Arrow refuses them; the stdlib path's converters say why, or round a
  decimal half-up to its scale as Spark does);
- a `DECIMAL` is taken from the number's own digits (msgspec.Raw), never through a double; one given as a
  JSON string is left to Spark. msgspec checks nothing in a Raw field, so a value whose text may name a
  decimal field twice (its key twice, or written with a \\u escape) is left to Spark too (Spark checks every
  occurrence).

Schemas with a `DECIMAL` or `FLOAT` below the top level take the stdlib path (spark_json.py) instead.
"""

from __future__ import annotations

import decimal
import itertools
import json
import operator
import re
from types import GenericAlias
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.formats.spark_json.values import Converter, converted_column

_INTEGRAL = {"byte", "short", "integer", "long"}
_NUMBER_START = frozenset(b"-0123456789")


def typed_types(schema: dict[str, Any]) -> list[Any] | None:
    """The msgspec type of each top-level field, or None when the schema is not one this path serves."""
    import msgspec

    counter = iter(range(1 << 30))

    def leaf(kind: Any, top: bool) -> Any:
        if isinstance(kind, str):
            if kind in _INTEGRAL:
                return int
            simple = {"boolean": bool, "double": float, "string": str}
            if kind in simple:
                return simple[kind]
            if top and kind == "float":
                return float
            if top and kind.startswith("decimal("):
                return msgspec.Raw
            return None
        if kind["type"] == "struct":
            fields = []
            for f in kind["fields"]:
                inner = leaf(f["type"], False)
                if inner is None:
                    return None
                fields.append((f["name"], inner))
            names = {f"f{i}": name for i, (name, _) in enumerate(fields)}
            return msgspec.defstruct(f"Row{next(counter)}", [(a, t | None, None) for a, (_, t) in
                                                             zip(names, fields, strict=True)], rename=names, gc=False)
        element = leaf(kind["elementType"] if kind["type"] == "array" else kind["valueType"], False)
        if element is None:
            return None
        # list[...] / dict[str, ...] built at run time
        if kind["type"] == "array":
            return GenericAlias(list, element | None)
        return GenericAlias(dict, (str, element | None))

    types = [leaf(f["type"], True) for f in schema["fields"]]
    return None if any(t is None for t in types) else types


class TypedDecoder:
    """Decodes a column of JSON values into one Python list per top-level field (msgspec does the parsing and
    type checks), then each list into its Arrow array."""

    def __init__(self, schema: dict[str, Any], types: list[Any], arrow: pa.StructType,
                 converters: list[Converter]) -> None:
        import msgspec

        self.names = [f["name"] for f in schema["fields"]]
        self.kinds = [f["type"] for f in schema["fields"]]
        attrs = {f"f{i}": name for i, name in enumerate(self.names)}
        # A decimal's field stays Raw (null comes as the text null): msgspec takes no union with Raw.
        row = msgspec.defstruct("Value", [(a, t if t is msgspec.Raw else t | None, None)
                                          for a, t in zip(attrs, types, strict=True)], rename=attrs,
                                gc=False)  # a value's objects hold no cycles: the collector need not track them
        self.decode = msgspec.json.Decoder(row).decode
        # msgspec reports bytes that are not UTF-8 with Python's own error
        self.errors = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError)
        self.field = [operator.attrgetter(a) for a in attrs]
        self.arrow, self.converters = arrow, converters
        self.decimal_names = [n for n, t in zip(self.names, types, strict=True) if t is msgspec.Raw]

    def parse(self, values: pa.Array, not_certain: type[Exception]) -> list[pa.Array]:
        """The Arrow array of each top-level field of `values` (binary); `not_certain(reason, row)` for a value
        left to Spark."""
        decode = self.decode
        for name in self.decimal_names:
            twice = _maybe_twice(values, name)
            if twice is not None:
                raise not_certain(f"field {name} may be given twice (Spark checks each occurrence)", twice)
        try:
            rows = [decode(raw) for raw in _slices(values)] if values.null_count == 0 else \
                [None if raw is None else decode(raw) for raw in values.to_pylist()]
        except self.errors:
            row, reason = self._first_refused(values.to_pylist())
            raise not_certain(reason, row) from None
        # One C-level pass per field: a third of the time of a tuple per row transposed.
        columns = [list(map(field, rows)) for field in self.field] if values.null_count == 0 else \
            [[None if r is None else field(r) for r in rows] for field in self.field]
        return [self._array(i, column, not_certain) for i, column in enumerate(columns)]

    def _first_refused(self, raws: list[bytes | None]) -> tuple[int, str]:
        for row, raw in enumerate(raws):
            if raw is None:
                continue
            try:
                self.decode(raw)
            except self.errors as exc:
                return row, _reason(str(exc))
        return 0, "not certain to parse as Spark does"

    def _array(self, i: int, column: list[Any], not_certain: type[Exception]) -> pa.Array:
        kind, name, target = self.kinds[i], self.names[i], self.arrow[i].type
        if isinstance(kind, str) and kind.startswith("decimal("):
            parsed = _exact_decimals(column, target)
            if parsed is not None:
                return parsed
            column = _decimals(column, name, not_certain)
        elif kind == "float":
            _check_floats(column, name, not_certain)
        elif _has_struct(kind):
            import msgspec

            column = msgspec.to_builtins(column)  # nested objects as dicts, under their JSON names
        try:
            return pa.array(column, target)
        except (UnicodeEncodeError, OverflowError, pa.ArrowException):
            pass
        # Arrow refused a value: an integer out of range, a decimal that needs rounding, ... A nested value is
        # checked by Arrow alone (the converters read the scanner's form of objects).
        convert = self.converters[i]
        return converted_column(column, lambda item: _checked(item, target) if isinstance(item, dict | list)
                                else convert(item), name, target)


def _maybe_twice(values: pa.Array, name: str) -> int | None:
    """The first row whose text may hold the key `name` twice: the key twice (at any depth: a nested object's
    key of the same name is a false alarm), or an escape that could spell it (false alarms only send a batch
    to Spark)."""
    key = re.escape(json.dumps(name, ensure_ascii=False)) + r"\s*:"
    repeated = pc.greater(pc.count_substring_regex(values, key), 1)
    escapes = "|".join(f"{ord(c):04x}" for c in sorted(set(name)) if ord(c) < 0x10000)
    pattern = rf"\\u(?i:{escapes})" if escapes else None
    if any(c in name for c in '"\\/') or any(ord(c) < 0x20 for c in name):
        pattern = r"\\"  # a short escape could spell it: any escape at all
    escaped = pc.match_substring_regex(values, pattern) if pattern else None
    flagged = repeated if escaped is None else pc.or_(repeated, escaped)
    flagged = pc.fill_null(flagged, False)
    if not pc.any(flagged).as_py():
        return None
    return int(pc.index(flagged, True).as_py())


def _slices(values: pa.Array) -> list[memoryview] | list[bytes]:
    """Each value of a binary array without nulls as a view of Arrow's buffer (no copy of its bytes)."""
    offsets_buffer, data = values.buffers()[1:3]
    if data is None or not pa.types.is_binary(values.type):
        return values.to_pylist()
    offsets = np.frombuffer(offsets_buffer, np.int32)[values.offset:values.offset + len(values) + 1].tolist()
    view = memoryview(data)
    return [view[start:end] for start, end in itertools.pairwise(offsets)]


def _reason(message: str) -> str:
    """msgspec's refusal as `field <path>: <what>` (its message ends with " - at `$.path`")."""
    head, found, path = message.rpartition(" - at `$.")
    return (f"field {path.rstrip('`')}: {head}" if found else f"not strict JSON ({message})")[:300]


def _has_struct(kind: Any) -> bool:
    if isinstance(kind, str):
        return False
    if kind["type"] == "struct":
        return True
    return _has_struct(kind["elementType"] if kind["type"] == "array" else kind["valueType"])


def _checked(item: Any, target: pa.DataType) -> Any:
    """A nested value Arrow can hold as `target` (else its error says why)."""
    pa.array([item], target)
    return item


def _exact_decimals(column: list[Any], target: pa.DataType) -> pa.Array | None:
    """The column of JSON texts (msgspec.Raw) as decimals parsed by Arrow, when every one is a number that fits
    `target` exactly (or null); None otherwise, and `_decimals` decides (rounding, refusals)."""
    texts = [None if raw is None or (text := bytes(raw)) == b"null" else text for raw in column]
    try:
        return pc.cast(pa.array(texts, pa.binary()).cast(pa.string()), target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _decimals(column: list[Any], name: str, not_certain: type[Exception]) -> list[Any]:
    out: list[Any] = []
    for row, raw in enumerate(column):
        if raw is None:
            out.append(None)
            continue
        text = bytes(raw)
        if text == b"null":
            out.append(None)
        elif text[0] in _NUMBER_START:
            out.append(decimal.Decimal(text.decode()))
        else:
            raise not_certain(f"field {name}: {text[:60]!r} is not a number for a DECIMAL", row)
    return out


def _check_floats(column: list[Any], name: str, not_certain: type[Exception]) -> None:
    """Refuse a `FLOAT` whose double lies halfway between two floats (rounding the text to a float directly,
    as Java does, and through a double could differ) or beyond the float range."""
    doubles = np.array([np.nan if v is None else v for v in column], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        singles = doubles.astype(np.float32)
        inexact = (singles.astype(np.float64) != doubles) & np.isfinite(doubles)
        if not inexact.any():
            return
        toward = np.where(doubles > singles.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
        neighbours = np.nextafter(singles, toward).astype(np.float64)
        halfway = inexact & (np.abs(doubles - singles.astype(np.float64)) == np.abs(neighbours - doubles))
        overflow = inexact & ~np.isfinite(singles)
    bad = np.flatnonzero(halfway | overflow)
    if bad.size:
        row = int(bad[0])
        raise not_certain(f"field {name}: {column[row]!r} is halfway between two FLOAT values or beyond them", row)


__all__ = ["TypedDecoder", "typed_types"]

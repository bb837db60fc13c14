"""JSON values parsed into Arrow exactly as Spark's `from_json` (PERMISSIVE) parses them, where that is certain.

The Delta sink's `value_schema` parses each record's value with `from_json`. The direct writer's tasks
parse here instead, and only accept what they can reproduce exactly: a value that is one well-formed JSON
object whose fields fit the schema without conversion Spark might do differently. Anything else (not
UTF-8, not strict JSON, trailing text, a duplicate key, a string where a number is expected, a number
that needs rounding or is out of range, ...) raises `NotCertain`, and the caller writes that batch through
Spark's own `from_json` instead, so every result is Spark's. Field names match exactly (as Spark's do);
fields the schema lacks are ignored; JSON `null` and missing fields are null.

The schema is Spark's JSON form of a struct (`StructType.json()`); `certain_schema_reason` says why one
is outside what this parser serves (dates, timestamps, binary, intervals, variants, maps without string
keys), so such a `value_schema` keeps Spark's writer whole.

Two decoders: msgspec's (spark_json_typed.py, typed and in C: most schemas) and, for a schema with a
`DECIMAL` or `FLOAT` below the top level or without msgspec, Python's own scanner with the checks here
(which refuse a duplicate key rather than check each occurrence).
"""

from __future__ import annotations

import contextlib
import decimal
import gc
import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from json.scanner import make_scanner
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.formats.spark_json.values import Converter, NotCertain, converted_column

_INTEGRAL = {"byte": (pa.int8(), 7), "short": (pa.int16(), 15), "integer": (pa.int32(), 31), "long": (pa.int64(), 63)}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")
# Larger integers are not all exactly a double: Spark's conversion of such a JSON number is not checked here.
_EXACT_DOUBLE = 2 ** 53
# Jackson's default read limits (number length, nesting depth) that Python's parser does not share: values
# that could reach them are left to Spark.
_LONG_NUMBER = r"\d{1000}"
_MAX_NESTING = 500
_LIMITED_LENGTH = 1000  # shorter values reach neither limit
_WHITESPACE = " \t\n\r"  # JSON's, which both parsers skip around a value
# Spark types whose JSON value Python's parser already gives as the row holds it.
_SAME: dict[str, type] = {"string": str, "boolean": bool, "double": float}
_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, Emax=10_000, Emin=-10_000)

def certain_schema_reason(schema_json: str) -> str | None:
    """Why values of this struct (Spark's JSON form) are left to Spark's `from_json`, or None."""
    schema = json.loads(schema_json)

    def walk(kind: Any, where: str) -> str | None:
        if isinstance(kind, str):
            if kind in _INTEGRAL or kind in ("boolean", "float", "double", "string") or _DECIMAL.fullmatch(kind):
                return None
            return f"{where} is {kind.upper()}"
        if kind["type"] == "struct":
            return next((r for f in kind["fields"] for r in (walk(f["type"], f"field {f['name']}"),) if r), None)
        if kind["type"] == "array":
            return walk(kind["elementType"], where)
        if kind["type"] == "map":
            if kind["keyType"] != "string":
                return f"{where} is a map with {str(kind['keyType']).upper()} keys"
            return walk(kind["valueType"], where)
        return f"{where} is {kind['type'].upper()}"

    return walk(schema, "the value")


def arrow_type(kind: Any) -> pa.DataType:
    """The Arrow type of a Spark type (JSON form) this parser serves."""
    if isinstance(kind, str):
        if kind in _INTEGRAL:
            return _INTEGRAL[kind][0]
        simple = {"boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64(), "string": pa.string()}
        if kind in simple:
            return simple[kind]
        precision, scale = _decimal(kind)
        return pa.decimal128(precision, scale)
    if kind["type"] == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"])) for f in kind["fields"]])
    if kind["type"] == "array":
        return pa.list_(arrow_type(kind["elementType"]))
    return pa.map_(pa.string(), arrow_type(kind["valueType"]))


class SparkJson:
    """Parses a column of JSON values (bytes) into the Arrow struct `from_json` would give, or raises
    NotCertain naming the first value it cannot be sure of (`row`, `reason`)."""

    def __init__(self, schema_json: str, typed: bool | None = None) -> None:
        """`typed`: decode with msgspec (spark_json_typed.py; None: where it serves the schema and is installed),
        or with Python's own JSON scanner."""
        self.schema = json.loads(schema_json)
        self.type = arrow_type(self.schema)
        self.fields = [f["name"] for f in self.schema["fields"]]
        self.kinds = [f["type"] for f in self.schema["fields"]]
        self.converters = [_converter(kind) for kind in self.kinds]
        self._typed = _typed_decoder(self.schema, self.type, self.converters) if typed is not False else None
        if typed and self._typed is None:
            raise ValueError("msgspec is not installed, or does not serve this schema")
        if self._typed is not None:
            return
        self._rows = _row_function(self.fields, self.kinds)
        uses_decimal = "decimal(" in schema_json
        # Decimals must see the number's digits, not a double's. The decoder's C scanner is called directly:
        # one value at the text's start, no Python frame around it.
        decoder = json.JSONDecoder(object_pairs_hook=tuple, parse_float=decimal.Decimal if uses_decimal else float)
        self._scan = make_scanner(decoder)  # type: ignore[arg-type]  # typeshed names a scanner, not its context

    def parse(self, values: pa.Array) -> pa.StructArray:
        """The parsed struct of each value (null for a null value)."""
        if self._typed is not None:
            beyond = _beyond_jackson(values)
            if beyond:
                raise NotCertain("a long number or deep nesting (Jackson's limits)", min(beyond))
            with _collector_paused():
                children = self._typed.parse(values, NotCertain)
            return pa.StructArray.from_arrays(children, fields=list(self.type), mask=values.is_null())
        return pa.StructArray.from_arrays(self._scanned(values), fields=list(self.type), mask=values.is_null())

    def _scanned(self, values: pa.Array) -> list[pa.Array]:
        """Each top-level field's array, the values parsed by Python's own JSON scanner."""
        columns: list[list[Any]] = [[] for _ in self.fields]
        appends = [c.append for c in columns]
        add_row = self._rows(appends, self.converters)
        scan = self._scan
        beyond = _beyond_jackson(values)
        for row, raw in enumerate(values.to_pylist()):
            if raw is None:
                for append in appends:
                    append(None)
                continue
            try:
                if beyond and row in beyond:
                    raise NotCertain("a long number or deep nesting (Jackson's limits)")
                text = raw.decode("utf-8").strip(_WHITESPACE)
                obj, end = scan(text, 0)
                if end != len(text):
                    raise NotCertain("text after the JSON value")
                if type(obj) is not tuple:
                    raise NotCertain("not a JSON object")
                fields = dict(obj)
                if len(fields) != len(obj):
                    raise NotCertain(f"field {_twice(obj)} appears twice")
            except NotCertain as exc:
                raise NotCertain(exc.reason, row) from None
            except StopIteration as stop:  # the scanner's way of saying where a value breaks off
                raise NotCertain(f"not strict JSON (broken at character {stop.value})", row) from None
            except (ValueError, RecursionError) as exc:
                raise NotCertain(f"not strict JSON ({type(exc).__name__}: {exc})"[:300], row) from None
            try:
                add_row(fields)
            except RecursionError:
                raise NotCertain("nested too deep to check", row) from None
            except (NotCertain, decimal.DecimalException) as exc:
                raise NotCertain(self._field_reason(fields, exc), row) from None
        return [self._child(i, column) for i, column in enumerate(columns)]

    def _child(self, i: int, column: list[Any]) -> pa.Array:
        kind = self.type[i].type
        try:
            return pa.array(column, kind)
        except (UnicodeEncodeError, pa.ArrowException) as exc:
            failure = exc
        # Values left for Arrow to check (top-level decimals, string arrays) that it refused.
        try:
            return converted_column(column, self.converters[i], self.fields[i], kind)
        except (UnicodeEncodeError, pa.ArrowException):
            raise NotCertain(f"a value Arrow cannot hold ({failure})"[:300], _first_unencodable(column)) from None

    def _field_reason(self, fields: dict[str, Any], error: BaseException) -> str:
        """Which field of a value its row function refused, and why."""
        for name, convert in zip(self.fields, self.converters, strict=True):
            item = fields.get(name)
            if item is None:
                continue
            try:
                convert(item)
            except (NotCertain, decimal.DecimalException) as exc:
                return f"field {name}: {exc.reason if isinstance(exc, NotCertain) else type(exc).__name__}"
        return str(error)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a batch's values become objects: they hold no cycles, and the
    collections their allocations would trigger cost a third of the parse (measured)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _typed_decoder(schema: dict[str, Any], arrow: pa.StructType, converters: list[Converter]) -> Any:
    """The msgspec decoder of the schema, or None (msgspec not installed, or a schema it does not serve)."""
    try:
        from kafka_spark.formats.spark_json.typed import TypedDecoder, typed_types

        types = typed_types(schema)
    except ImportError:
        return None
    return TypedDecoder(schema, types, arrow, converters) if types is not None else None


def _row_function(names: list[str], kinds: list[Any]) -> Callable[[list[Any], list[Converter]], Converter]:
    """A function that makes, from each column's `append` and each field's converter, the function adding one
    value's fields (a dict) to the columns. Generated for the schema: each field's common case is checked
    inline, the rest goes to its converter, as `_converter` would for every value."""
    width = len(names)
    lines = ["def make(appends, converters):",
             f"    {''.join(f'a{i}, ' for i in range(width))}= appends",
             f"    {''.join(f'c{i}, ' for i in range(width))}= converters",
             "    def add(d):"]
    for i, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        lines.append(f"        v = d.get({name!r})")
        lines.append(f"        a{i}(v if v is None else {_inline(kind, f'c{i}')})")
    lines.append("    return add")
    namespace: dict[str, Any] = {"Decimal": decimal.Decimal}
    exec("\n".join(lines), namespace)  # the source holds the schema's names as literals (repr), nothing else
    return namespace["make"]


def _inline(kind: Any, converter: str) -> str:
    """A Python expression over a top-level field's non-null value `v`: its column's value, the common cases
    checked inline and the rest given to `converter` (that field's `_converter`)."""
    if isinstance(kind, str):
        if kind in _INTEGRAL:
            bits = _INTEGRAL[kind][1]
            return f"v if type(v) is int and {-(1 << bits)} <= v <= {(1 << bits) - 1} else {converter}(v)"
        if kind == "double":
            # a schema with decimals parses every fraction as a Decimal
            return f"v if type(v) is float else float(v) if type(v) is Decimal else {converter}(v)"
        if kind in _SAME:
            return f"v if type(v) is {_SAME[kind].__name__} else {converter}(v)"
        if _DECIMAL.fullmatch(kind):
            # Arrow rescales these exactly or refuses (then the converter rounds them as Spark does)
            return f"v if type(v) is Decimal or type(v) is int else {converter}(v)"
    elif kind["type"] == "array" and kind["elementType"] == "string":
        # Arrow refuses any element that is not a string (SparkJson._child)
        return f"v if type(v) is list else {converter}(v)"
    return f"{converter}(v)"


def _twice(pairs: tuple[tuple[str, Any], ...]) -> str:
    seen: set[str] = set()
    return next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]


def _beyond_jackson(values: pa.Array) -> set[int]:
    """Rows whose value may pass a limit Jackson reads JSON under (a number's length, nesting depth) and
    Python's parser does not: only values long enough to, checked by Arrow's own kernels."""
    if not len(values):
        return set()
    long = pc.fill_null(pc.greater(pc.binary_length(values), _LIMITED_LENGTH), False)
    if not pc.any(long).as_py():
        return set()
    rows = pc.indices_nonzero(long)
    candidates = values.take(rows)
    nesting = pc.add(pc.count_substring(candidates, "{"), pc.count_substring(candidates, "["))
    flagged = pc.or_(pc.match_substring_regex(candidates, _LONG_NUMBER), pc.greater(nesting, _MAX_NESTING))
    return set(rows.filter(flagged).to_pylist())


def _first_unencodable(column: list[Any]) -> int:
    for row, item in enumerate(column):
        try:
            json.dumps(item, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            return row
    return 0


def _decimal(kind: str) -> tuple[int, int]:
    match = _DECIMAL.fullmatch(kind)
    assert match is not None
    return int(match.group(1)), int(match.group(2))


def _converter(kind: Any) -> Converter:
    """The function that checks and converts one non-null JSON value of Spark type `kind`."""
    if isinstance(kind, str):
        if kind in _INTEGRAL:
            return _integral(_INTEGRAL[kind][1])
        if kind == "boolean":
            return _boolean
        if kind == "string":
            return _string
        if kind == "double":
            return _double
        if kind == "float":
            return _float
        return _decimal_converter(*_decimal(kind))
    if kind["type"] == "struct":
        return _struct([(f["name"], _converter(f["type"])) for f in kind["fields"]])
    if kind["type"] == "array":
        return _array(_converter(kind["elementType"]))
    return _map(_converter(kind["valueType"]))


def _integral(bits: int) -> Converter:
    low, high = -(1 << bits), (1 << bits) - 1

    def convert(value: Any) -> int:
        # bool is an int in Python; JSON true is not a number to Spark.
        if type(value) is not int or not low <= value <= high:
            raise NotCertain(f"{_shown(value)} is not an integer in range")
        return value

    return convert


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise NotCertain(f"{_shown(value)} is not true or false")
    return value


def _string(value: Any) -> str:
    # Spark keeps a non-string token's own text, which Python's parser does not keep.
    if type(value) is not str:
        raise NotCertain(f"{_shown(value)} is not a JSON string")
    return value


def _double(value: Any) -> float:
    kind = type(value)
    if kind is float:
        return value
    if kind is decimal.Decimal:
        return float(value)  # correctly rounded, as Java's Double.parseDouble
    if kind is int and -_EXACT_DOUBLE <= value <= _EXACT_DOUBLE:
        return float(value)
    raise NotCertain(f"{_shown(value)} is not a number for a DOUBLE")


def _float(value: Any) -> float:
    number = _double(value)
    if math.isnan(number) or math.isinf(number):
        return number
    try:
        single = struct.unpack("f", struct.pack("f", number))[0]
    except OverflowError:
        raise NotCertain(f"{_shown(value)} is beyond FLOAT's range") from None
    if single != number:
        # Rounding the text to a float directly and through a double differ only at a float midpoint.
        with np.errstate(over="ignore"):  # the neighbour of FLOAT's largest value is infinite
            other = float(np.nextafter(np.float32(single), np.float32(math.copysign(math.inf, number - single))))
        if abs(number - single) == abs(other - number):
            raise NotCertain(f"{_shown(value)} lies halfway between two FLOAT values")
    return single


def _decimal_converter(precision: int, scale: int) -> Converter:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> decimal.Decimal:
        kind = type(value)
        if kind is not int and kind is not decimal.Decimal:
            raise NotCertain(f"{_shown(value)} is not a number for a DECIMAL({precision},{scale})")
        # Spark rounds the number half-up to the scale and fails a record whose digits exceed the precision.
        try:
            rounded = decimal.Decimal(value).quantize(quantum, context=_CONTEXT)
        except decimal.DecimalException:  # an exponent far past the scale: more digits than any precision
            raise NotCertain(f"{_shown(value)} does not fit DECIMAL({precision},{scale})") from None
        if not rounded.is_finite() or (len(rounded.as_tuple().digits) > precision and rounded != 0):
            raise NotCertain(f"{_shown(value)} does not fit DECIMAL({precision},{scale})")
        return rounded

    return convert


def _struct(fields: list[tuple[str, Converter]]) -> Converter:
    index = {name: (name, convert) for name, convert in fields}

    def convert(value: Any) -> dict[str, Any]:
        if type(value) is not tuple:
            raise NotCertain(f"{_shown(value)} is not a JSON object")
        out: dict[str, Any] = {}
        for key, item in value:
            found = index.get(key)
            if found is None:
                continue
            if key in out:
                raise NotCertain(f"field {key} appears twice")
            out[key] = None if item is None else found[1](item)
        return out

    return convert


def _array(element: Converter) -> Converter:
    def convert(value: Any) -> list[Any]:
        if type(value) is not list:
            raise NotCertain(f"{_shown(value)} is not a JSON array")
        return [None if item is None else element(item) for item in value]

    return convert


def _map(element: Converter) -> Converter:
    def convert(value: Any) -> list[tuple[str, Any]]:
        if type(value) is not tuple:
            raise NotCertain(f"{_shown(value)} is not a JSON object")
        if len({k for k, _ in value}) != len(value):
            raise NotCertain("a key appears twice")
        return [(key, None if item is None else element(item)) for key, item in value]

    return convert


def _shown(value: Any) -> str:
    if type(value) is tuple:
        return "an object"
    if type(value) is list:
        return "an array"
    # a string's or number's own text can be long: only its start is shown
    return repr(value[:60] if isinstance(value, str) else value)[:60]


__all__ = ["NotCertain", "SparkJson", "arrow_type", "certain_schema_reason"]

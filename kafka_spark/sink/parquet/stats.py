"""Per-file statistics as Delta on Spark writes them for data skipping: `numRecords`, then `minValues`,
`maxValues` and `nullCount` of the indexed leaf columns, with bounds only ever wider than the data (string
prefixes with Delta's tie-breaker, timestamps rounded up to the millisecond, no bounds for NaN-holding floats)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

STRING_PREFIX = 32  # Delta's delta.dataSkippingStringPrefixLength default
_BOUNDED = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}


def leaf_columns(schema_json: str) -> list[tuple[tuple[str, ...], str]]:
    """(path, Delta type name) of every leaf column in schema order; a struct's fields are leaves of their own,
    an array or a map is one leaf (its type name 'array' / 'map'), a decimal's name is 'decimal(p,s)'."""
    out: list[tuple[tuple[str, ...], str]] = []

    def walk(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> None:
        for f in fields:
            kind = f["type"]
            path = (*prefix, f["name"])
            if isinstance(kind, dict) and kind.get("type") == "struct":
                walk(kind["fields"], path)
            else:
                out.append((path, kind if isinstance(kind, str) else kind["type"]))

    walk(json.loads(schema_json)["fields"], ())
    return out


def stats_columns(schema_json: str, configuration: Mapping[str, str | None],
                  partition_columns: Iterable[str] = ()) -> tuple[tuple[str, ...], ...]:
    """The leaf columns Delta collects statistics on for a table with this schema, configuration and partition
    columns (which have none)."""
    partitions = set(partition_columns)
    leaves = [path for path, _ in leaf_columns(schema_json) if path[0] not in partitions]
    named = configuration.get("delta.dataSkippingStatsColumns")
    if named:
        wanted = [tuple(p.strip().strip("`") for p in name.split(".")) for name in named.split(",") if name.strip()]
        return tuple(p for p in leaves if any(p[:len(w)] == w for w in wanted))
    count = int(configuration.get("delta.dataSkippingNumIndexedCols") or 32)
    return tuple(leaves if count < 0 else leaves[:count])


class Stats:
    """Delta statistics of one file, merged batch by batch."""

    def __init__(self, schema_json: str, columns: Iterable[tuple[str, ...]], tight_bounds: bool) -> None:
        kinds = dict(leaf_columns(schema_json))
        self.columns = [(p, kinds[p]) for p in columns if p in kinds]
        self.tight_bounds = tight_bounds
        self.records = 0
        self.nulls: dict[tuple[str, ...], int] = {p: 0 for p, _ in self.columns}
        self.low: dict[tuple[str, ...], Any] = {}
        self.high: dict[tuple[str, ...], Any] = {}
        self.unbounded: set[tuple[str, ...]] = set()  # a value made a bound unknowable (NaN, a long string)

    def add(self, batch: pa.RecordBatch) -> None:
        self.records += batch.num_rows
        for path, kind in self.columns:
            column = _column(batch, path)
            self.nulls[path] += column.null_count
            if (kind in _BOUNDED or _is_decimal(kind)) and column.null_count < len(column):
                self._bound(path, kind, column)

    def _bound(self, path: tuple[str, ...], kind: str, column: pa.Array) -> None:
        if kind in ("float", "double") and pc.any(pc.is_nan(column)).as_py():
            self.unbounded.add(path)
            return
        found = pc.min_max(column)
        low, high = found["min"].as_py(), found["max"].as_py()
        if low is None:
            return
        if path not in self.low or low < self.low[path]:
            self.low[path] = low
        if path not in self.high or high > self.high[path]:
            self.high[path] = high

    def to_json(self) -> str:
        low: dict[str, Any] = {}
        high: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for path, kind in self.columns:
            _put(nulls, path, self.nulls[path])
            if path in self.unbounded or path not in self.low:
                continue
            bounds = _json_bounds(kind, self.low[path], self.high[path])
            if bounds[0] is not None:
                _put(low, path, bounds[0])
            if bounds[1] is not None:
                _put(high, path, bounds[1])
        out: dict[str, Any] = {"numRecords": self.records, "minValues": low, "maxValues": high, "nullCount": nulls}
        if self.tight_bounds:
            out["tightBounds"] = True
        return _with_decimals(out)


def _is_decimal(kind: Any) -> bool:
    return isinstance(kind, str) and kind.startswith("decimal")


def _with_decimals(stats: dict[str, Any]) -> str:
    """`stats` as JSON, a decimal bound as a JSON number with its own digits (as Delta on Spark writes it), not
    a double's."""
    numbers: list[str] = []
    marker = f"@decimal-{uuid.uuid4().hex}-"

    def placeholder(value: Any) -> str:
        if not isinstance(value, decimal.Decimal):
            raise TypeError(f"{type(value).__name__} in statistics")
        numbers.append(str(value))
        return f"{marker}{len(numbers) - 1}"

    text = json.dumps(stats, separators=(",", ":"), default=placeholder)
    for i, number in enumerate(numbers):
        text = text.replace(f'"{marker}{i}"', number, 1)
    return text


def _column(batch: pa.RecordBatch, path: tuple[str, ...]) -> pa.Array:
    column = batch.column(path[0])
    for name in path[1:]:
        # flatten() gives a struct's children with the struct's own nulls merged in: a field of a null
        # struct counts as null, as Delta counts it.
        struct_type = column.type
        column = column.flatten()[struct_type.get_field_index(name)]
    return column


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = value


def _json_bounds(kind: str, low: Any, high: Any) -> tuple[Any, Any]:
    if kind == "string":
        return truncated_min(low, STRING_PREFIX), truncated_max(high, STRING_PREFIX)
    if kind in ("float", "double"):
        return (low if math.isfinite(low) else None), (high if math.isfinite(high) else None)
    if kind in ("timestamp", "timestamp_ntz"):
        return _timestamp(low, kind, up=False), _timestamp(high, kind, up=True)
    if kind == "date":
        return low.isoformat(), high.isoformat()
    return low, high


# Java's UTF-16 view of a string, in which Delta on Spark measures a bound's prefix.
_ASCII_MAX = "\x7f"
_MAX_CODE_POINT = "\U0010ffff"


def _units(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _unit(units: bytes, i: int) -> int:
    return int.from_bytes(units[2 * i:2 * i + 2], "little")


def truncated_min(text: str, prefix: int) -> str | None:
    """A string minimum as Delta on Spark keeps it: its first `prefix` UTF-16 units, a surrogate pair kept whole."""
    units = _units(text)
    if len(units) // 2 <= prefix:
        return text
    if prefix <= 0:
        return None
    cut = prefix + 1 if 0xD800 <= _unit(units, prefix - 1) <= 0xDBFF and 0xDC00 <= _unit(units, prefix) <= 0xDFFF \
        else prefix
    return units[:2 * cut].decode("utf-16-le", "surrogatepass")


def truncated_max(text: str, prefix: int) -> str | None:
    """A string maximum as Delta on Spark keeps it: a prefix of it followed by a character above every one that
    could follow (U+007F, else U+10FFFF), the prefix grown (up to twice its length) past U+10FFFF characters;
    None (no bound) when it cannot."""
    units = _units(text)
    length = len(units) // 2
    if length <= prefix:
        return text
    start = truncated_min(text, prefix)
    if start is None:
        return None
    current = len(_units(start)) // 2
    while current <= 2 * prefix:
        if current >= length:
            return text
        if current + 1 < length and _unit(units, current) == 0xDBFF and _unit(units, current + 1) == 0xDFFF:
            current += 2  # U+10FFFF itself: nothing is above it, so it stays in the prefix
            continue
        head = units[:2 * current].decode("utf-16-le", "surrogatepass")
        return head + (_ASCII_MAX if _unit(units, current) < 0x7F else _MAX_CODE_POINT)
    return None


def _timestamp(value: dt.datetime, kind: str, up: bool) -> str:
    # Delta stores milliseconds: a maximum rounds up so that it still bounds the microseconds.
    if up and value.microsecond % 1000:
        value = value + dt.timedelta(microseconds=1000 - value.microsecond % 1000)
    text = value.replace(tzinfo=None).isoformat(timespec="milliseconds")
    return text + "Z" if kind == "timestamp" else text

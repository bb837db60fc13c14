"""The column-wise path of JSON Schema keys and values read without validation (`validate=false`): each payload
parsed by msgspec straight into typed objects made from the reader schema's mapping (types.py), the whole group's
objects then built into the Arrow column field by field.

msgspec parses in C and checks each value's JSON type as it goes; the per-record path (json.loads, then the
converters of types.py) accepts a little more, so whatever msgspec refuses goes per record, where it is read
or named as before: an integer written as 1.0, NaN and Infinity, lone surrogate escapes, a byte-order mark, a
value of the wrong type, a 64-bit overflow, ... Before parsing, the records msgspec would accept and json.loads
would not are left per record too: bytes that are not UTF-8 (msgspec skips unknown fields unchecked), integers of
more digits than Python converts, and values nested deeper than json.loads may follow.

With `validate=true` (the default) nothing is decoded here: the writer's schema is checked per record.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.formats.groups import Group, value_offsets
from kafka_spark.formats.json_schema.codec import JsonSchemaDecoder
from kafka_spark.formats.json_schema.types import JsonType, json_text

SWITCH = "KAFKA_SPARK_JSON_SCHEMA_BLOCK"
_LONGEST = (1 << 31) - 1
# A record with this many `[` and `{` bytes may nest deeper than json.loads follows (from deep in a stack): per
# record.
_MAX_OPENERS = 256
_INT64 = (-(1 << 63), (1 << 63) - 1)

# (the group's decoded values of one schema node) -> its Arrow column
Build = Callable[[list[Any]], pa.Array]


@dataclass(frozen=True)
class _Prepared:
    decode: Callable[[bytes], Any]
    build: Build


_prepared: weakref.WeakKeyDictionary[JsonSchemaDecoder, _Prepared | str] = weakref.WeakKeyDictionary()


def block_path_on(decoder: JsonSchemaDecoder | None = None) -> bool:
    """Whether the column-wise path runs in this process (for `decoder`: one that does not validate): msgspec is
    installed, and the environment does not turn it off (KAFKA_SPARK_JSON_SCHEMA_BLOCK=0: every record per
    record)."""
    if os.environ.get(SWITCH, "1") == "0" or (decoder is not None and decoder.validates):
        return False
    try:
        import msgspec  # noqa: F401
    except ImportError:
        return False
    return True


def decode_group(decoder: JsonSchemaDecoder, group: Group, framed: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    """(which of `framed`'s records the path decoded, their values in the decoder's Arrow type), or None when it
    decoded none. `framed`: binary values, none null, all framed as `group` says. Without validation the
    per-record path never asks the registry, and neither does this."""
    if decoder.validates:
        return None
    prepared = _prepare(decoder)
    if prepared is None:
        return None
    payloads = pc.binary_slice(framed, group.start, _LONGEST)
    exact = _plain(payloads)
    decode = prepared.decode
    raws = payloads.to_pylist()
    try:
        values = [decode(p) for p in raws] if exact.all() else None
    except Exception:
        values = None
    if values is None:  # some record is not for this path: find which, one by one
        values = []
        for row, (take, payload) in enumerate(zip(exact.tolist(), raws, strict=True)):
            if take:
                try:
                    values.append(decode(payload))
                except Exception:  # refused by msgspec (or beyond its limits): read or named per record
                    exact[row] = False
    if not values:
        return None
    try:
        column = prepared.build(values)
    except Exception:  # values the column cannot hold: the per-record path says why
        return None
    if column.type != decoder.arrow_type or len(column) != len(values):
        return None
    return exact, column


def _plain(payloads: pa.Array) -> np.ndarray:
    """Which payloads msgspec may take: UTF-8, few `[`/`{`, no integer longer than Python converts."""
    n = len(payloads)
    offsets = value_offsets(payloads)
    data = np.frombuffer(payloads.buffers()[2], np.uint8) if n and payloads.buffers()[2] is not None else None
    if data is None or offsets[-1] == offsets[0]:
        return np.ones(n, dtype=bool)
    data = data[offsets[0]:offsets[-1]]
    lengths = offsets[1:] - offsets[:-1]
    filled = np.flatnonzero(lengths)
    starts = offsets[:-1][filled] - offsets[0]  # strictly increasing: each sum runs to the next filled row

    def per_row(mask: np.ndarray) -> np.ndarray:
        counts = np.zeros(n, dtype=np.int64)
        counts[filled] = np.add.reduceat(mask, starts, dtype=np.int64)
        return counts

    plain = np.ones(n, dtype=bool)
    if (lengths >= _MAX_OPENERS).any():
        plain = per_row((data == ord("[")) | (data == ord("{"))) < _MAX_OPENERS
    high = data >= 0x80
    wide = per_row(high) > 0 if high.any() else np.zeros(n, dtype=bool)
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    long = lengths > limit if limit else np.zeros(n, dtype=bool)
    check = np.flatnonzero(plain & (wide | long))
    if len(check):
        digits = re.compile(rb"[0-9]{%d}" % (limit + 1)) if limit else None
        for row, payload in zip(check.tolist(), payloads.take(pa.array(check)).to_pylist(), strict=True):
            try:
                payload.decode("utf-8")  # strict: json.loads takes encoded surrogates, which no column holds
            except UnicodeDecodeError:
                plain[row] = False
                continue
            if digits is not None and long[row] and digits.search(payload):
                plain[row] = False
    return plain


def _prepare(decoder: JsonSchemaDecoder) -> _Prepared | None:
    found = _prepared.get(decoder)
    if found is None:
        import msgspec

        try:
            kind, build = _plan(decoder.mapping, msgspec, [0])
            found = _Prepared(msgspec.json.Decoder(kind).decode, build)
        except (TypeError, ValueError) as exc:  # a schema msgspec cannot type
            found = str(exc)
        _prepared[decoder] = found
    return found if isinstance(found, _Prepared) else None


def _plan(mapping: JsonType, msgspec: Any, counter: list[int]) -> tuple[Any, Build]:
    """The msgspec type of a schema node (its JSON null allowed) and the builder of its column."""
    arrow = mapping.arrow_type
    if mapping.kind == "integer":
        return Annotated[int, msgspec.Meta(ge=_INT64[0], le=_INT64[1])] | None, _scalar(arrow)
    if mapping.kind == "number":
        return float | None, _scalar(arrow)
    if mapping.kind == "boolean":
        return bool | None, _scalar(arrow)
    if mapping.kind == "string":
        return str | None, _scalar(arrow)
    if mapping.kind in ("list", "map"):
        assert mapping.item is not None
        item, build_item = _plan(mapping.item, msgspec, counter)
        if mapping.kind == "list":
            return list[item] | None, _list(arrow, build_item)  # type: ignore[valid-type]
        return dict[str, item] | None, _map(arrow, build_item)  # type: ignore[valid-type]
    if mapping.kind == "struct":
        assert mapping.fields is not None
        names = list(mapping.fields)
        planned = [_plan(t, msgspec, counter) for t in mapping.fields.values()]
        attrs = [f"f{i}" for i in range(len(names))]
        counter[0] += 1
        fields = [(a, kind, msgspec.Raw(b"null") if kind is msgspec.Raw else None)
                  for a, (kind, _) in zip(attrs, planned, strict=True)]
        cls = msgspec.defstruct(f"Object{counter[0]}", fields, rename=dict(zip(attrs, names, strict=True)), gc=False)
        return cls | None, _struct(arrow, cls(), attrs, [build for _, build in planned])
    # free-form: kept as its JSON text. A Raw cannot be in a union: JSON null arrives as the text null.
    return msgspec.Raw, _text


def _scalar(arrow: pa.DataType) -> Build:
    return lambda values: pa.array(values, type=arrow)


def _text(values: list[Any]) -> pa.Array:
    texts = []
    for raw in values:
        value = None if raw is None else json.loads(bytes(raw))
        texts.append(None if value is None else json_text(value))
    return pa.array(texts, type=pa.string())


def _offsets(values: list[Any]) -> tuple[pa.Array, pa.Array | None]:
    lengths = np.fromiter((0 if v is None else len(v) for v in values), dtype=np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _LONGEST:
        raise ValueError("more items than one column holds")
    missing = [v is None for v in values]
    return pa.array(offsets.astype(np.int32)), pa.array(missing) if any(missing) else None


def _list(arrow: pa.DataType, item: Build) -> Build:
    def build(values: list[Any]) -> pa.Array:
        offsets, mask = _offsets(values)
        items = item(list(itertools.chain.from_iterable(v for v in values if v is not None)))
        return pa.ListArray.from_arrays(offsets, items, type=arrow, mask=mask)

    return build


def _map(arrow: pa.DataType, item: Build) -> Build:
    def build(values: list[Any]) -> pa.Array:
        offsets, mask = _offsets(values)
        present = [v for v in values if v is not None]
        keys = pa.array(list(itertools.chain.from_iterable(present)), type=pa.string())
        items = item(list(itertools.chain.from_iterable(v.values() for v in present)))
        return pa.MapArray.from_arrays(offsets, keys, items, type=arrow, mask=mask)

    return build


def _struct(arrow: pa.DataType, empty: Any, attrs: list[str], builds: list[Build]) -> Build:
    getters = [attrgetter(a) for a in attrs]
    fields = list(arrow)

    def build(values: list[Any]) -> pa.Array:
        missing = [v is None for v in values]
        objects = [empty if v is None else v for v in values] if any(missing) else values
        children = [b(list(map(g, objects))) for g, b in zip(getters, builds, strict=True)]
        mask = pa.array(missing) if any(missing) else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)

    return build

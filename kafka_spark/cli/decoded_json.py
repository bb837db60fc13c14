"""Decoded keys and values as one line of readable JSON, walked with their Arrow type.

Structs and maps are objects (map keys as text), lists are arrays, decimals are JSON numbers with exactly
their digits (`12.30`, never a binary fraction), dates are `2026-01-31`, times `12:30:00.250`, timestamps
ISO-8601 in UTC with milliseconds (microseconds when they have them), `Z` for UTC (a timestamp without a
time zone has no suffix), bytes are base64, and NaN and the infinities, which JSON lacks, are the strings
`"NaN"`, `"Infinity"` and `"-Infinity"`; a FLOAT prints as the shortest text that reads back as it.
"""

from __future__ import annotations

import base64
import functools
import math
from collections.abc import Callable
from datetime import date, datetime, time, timezone
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import pyarrow as pa

Render = Callable[[Any], str]


def json_text(value: Any, kind: pa.DataType) -> str:
    """`value` (a Python value of an Arrow column of type `kind`, as `to_pylist` gives it) as compact JSON."""
    return renderer(kind)(value)


@functools.lru_cache(maxsize=256)
def renderer(kind: pa.DataType) -> Render:
    """The JSON writer of values of type `kind`, built once per type (the type is walked once, not per value)."""
    inner = _render(kind)
    return lambda value: "null" if value is None else inner(value)


def _render(kind: pa.DataType) -> Render:
    """The writer of a non-null value of type `kind`."""
    if pa.types.is_struct(kind):
        fields = [(kind.field(i).name, encode_basestring(kind.field(i).name) + ":", renderer(kind.field(i).type))
                  for i in range(kind.num_fields)]
        return lambda v: "{" + ",".join(label + item(v.get(name)) for name, label, item in fields) + "}"
    if pa.types.is_map(kind):
        item = renderer(kind.item_type)
        return lambda v: "{" + ",".join(encode_basestring(_key(k)) + ":" + item(x) for k, x in v) + "}"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        element = renderer(kind.value_type)
        return lambda v: "[" + ",".join(element(x) for x in v) + "]"
    if pa.types.is_decimal(kind):
        # plain notation with the column's scale: 0.0000001, not 1E-7
        return lambda v: format(v, "f")
    if pa.types.is_timestamp(kind):
        return lambda v: encode_basestring(_timestamp(v))
    if pa.types.is_date(kind):
        return lambda v: encode_basestring(v.isoformat())
    if pa.types.is_time(kind):
        return lambda v: encode_basestring(v.isoformat(timespec="milliseconds" if v.microsecond % 1000 == 0
                                                       else "auto"))
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return lambda v: encode_basestring(base64.b64encode(bytes(v)).decode("ascii"))
    if pa.types.is_boolean(kind):
        return lambda v: "true" if v else "false"
    if pa.types.is_float64(kind):
        return _float
    if pa.types.is_floating(kind):
        # the shortest text that reads back as the same float32 (0.1, not 0.10000000149011612)
        return lambda v: _float(v, lambda f: str(np.float32(f)))
    if pa.types.is_integer(kind):
        return str
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return encode_basestring
    return lambda v: encode_basestring(str(v))


def _float(value: float, text: Callable[[float], str] = repr) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return text(value)


def _key(key: Any) -> str:
    if isinstance(key, bytes):
        return base64.b64encode(key).decode("ascii")
    if isinstance(key, datetime | date | time):
        return key.isoformat()
    return str(key)


def _timestamp(value: datetime) -> str:
    spec = "milliseconds" if value.microsecond % 1000 == 0 else "microseconds"
    if value.tzinfo is None:
        return value.isoformat(timespec=spec)
    return value.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec=spec) + "Z"

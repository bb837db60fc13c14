"""Hive-style partition directories and values as Delta on Spark writes them: `col=value/` path segments
(escaped as Spark escapes them) and each value's text in the add action's `partitionValues`."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import zoneinfo
from collections.abc import Iterable
from typing import Any

import numpy as np

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"  # the directory of a null (or empty) partition value
# The characters Spark's ExternalCatalogUtils.escapePathName writes as %XX in partition directories
# (on every platform but Windows, which adds ' ', '<', '>' and '|').
_ESCAPED = frozenset([*map(chr, range(0x01, 0x20)), '"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f",
                      "{", "[", "]", "^"])
# The partition column types whose values the direct writer serialises (all of Delta's atomic types).
PARTITION_KINDS = frozenset({"string", "binary", "boolean", "byte", "short", "integer", "long", "float", "double",
                             "date", "timestamp", "timestamp_ntz"})


def escape_path_name(text: str) -> str:
    """`text` as Spark's ExternalCatalogUtils.escapePathName writes it in a path: %XX (upper-case hex) for
    each character it escapes."""
    if not any(c in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def time_zone(name: str) -> dt.tzinfo | None:
    """The zone a Spark session time zone ID names (a region or a fixed offset); None for one unknown here."""
    if name in ("UTC", "Z", "GMT", "UT"):
        return dt.timezone.utc
    offset = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0)))
    try:
        return zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return None


def partition_value(kind: str, value: Any, zone: dt.tzinfo = dt.timezone.utc) -> tuple[str | None, str | None]:
    """A partition value of Delta type `kind` (as pyarrow's `as_py` gives it) as Delta on Spark records it: the
    text of its directory (before escaping) and its `partitionValues` entry; (None, None) for a null, and for an
    empty text, which Spark's writer makes null. Timestamps are recorded in UTC (ISO 8601, microseconds) and
    named in the session time zone `zone`, as Spark casts them to text."""
    if value is None:
        return None, None
    text: str
    if kind == "timestamp":
        local = value.astimezone(zone)
        return _spark_timestamp(local), value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if kind == "timestamp_ntz":
        text = _spark_timestamp(value)
    elif kind == "binary":
        # Spark casts bytes to text as UTF-8, a malformed sequence replaced.
        text = bytes(value).decode("utf-8", "replace")
    elif kind == "boolean":
        text = "true" if value else "false"
    elif kind in ("float", "double"):
        text = _java_float(value, single=kind == "float")
    elif kind.startswith("decimal"):
        text = format(value, "f")
    elif kind == "date":
        text = value.isoformat()
    else:
        text = str(value)
    return (text, text) if text else (None, None)


def partition_path(columns: Iterable[tuple[str, str | None]]) -> str:
    """The directory (`a=1/b=x/`) of a file whose partition columns have these directory texts (None: null)."""
    return "".join(f"{escape_path_name(name)}={DEFAULT_PARTITION_NAME if text is None else escape_path_name(text)}/"
                   for name, text in columns)


def _spark_timestamp(value: dt.datetime) -> str:
    # Spark's timestamp text: seconds always, the fraction without its trailing zeros.
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{value.microsecond:06d}".rstrip("0") if value.microsecond else text


def _java_float(value: float, single: bool) -> str:
    """Java's Float/Double.toString of `value` (Spark casts floats to text so): the shortest digits that
    name the number; plain from 10^-3 to 10^7, otherwise d.dddE<n>. (JDK 17 prints a few values with one
    more digit than the shortest: both name the same number.)"""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    shortest = np.format_float_positional(np.float32(value), unique=True) if single else repr(value)
    sign, digits, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            body = "0." + "0" * -point + text
        elif point >= len(text):
            body = text + "0" * (point - len(text)) + ".0"
        else:
            body = f"{text[:point]}.{text[point:]}"
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{point - 1}"
    return ("-" if sign else "") + body

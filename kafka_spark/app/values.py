"""Parsers of the applications' setting values: each takes the value (a flag's text, a TOML value or an
environment variable) and the name to blame, and returns the typed value or raises a one-line ConfigError."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kafka_spark.client.properties import parse_bool as client_bool
from kafka_spark.errors import ConfigError

Parser = Callable[[Any, str], Any]


def parse_bool(value: Any, name: str) -> bool:
    return client_bool(name, value)


def parse_positive(value: Any, name: str, zero_ok: bool = False) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or str(value).strip().isdigit()):
        raise ConfigError(f"{name}: expected a whole number, got {value!r}")
    number = int(value)
    if number < (0 if zero_ok else 1):
        raise ConfigError(f"{name}: must be {'0 or more' if zero_ok else 'at least 1'}, got {number}")
    return number


def parse_count(value: Any, name: str) -> int:
    return parse_positive(value, name, zero_ok=True)


def parse_names(value: Any, name: str) -> list[str]:
    """A list of names from a TOML array, a comma-separated string, or repeated flags that may hold commas."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [part for v in value for part in v.split(",")]
    else:
        raise ConfigError(f"{name}: expected a list of names or a comma-separated string, got {value!r}")
    return [v.strip() for v in items if v.strip()]


def parse_partitions(value: Any, name: str) -> list[str]:
    """`partition-by` entries as `parse_names` gives names, a comma inside parentheses kept in its entry (an
    Iceberg transform: `bucket(16, key)`)."""
    if isinstance(value, str):
        value = [value]
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ConfigError(f"{name}: expected a list of columns or a comma-separated string, got {value!r}")
    items: list[str] = []
    for text in value:
        depth, start = 0, 0
        for i, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and depth <= 0:
                items.append(text[start:i])
                start = i + 1
        items.append(text[start:])
    return [v.strip() for v in items if v.strip()]


def parse_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}: expected a non-empty string, got {value!r}")
    return value.strip()


def parse_time(text: str, name: str) -> int:
    """Epoch milliseconds from digits or an ISO-8601 date/time (UTC unless it names a zone)."""
    if text.strip().lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def parse_starting(value: Any, name: str) -> str:
    """Where a new sink starts, as the sink takes it: earliest, latest or epoch milliseconds (given bare or as
    @TIME, TIME in epoch milliseconds or ISO-8601)."""
    text = str(value).strip().lower()
    if text in ("earliest", "latest") or (text.isdigit() and not isinstance(value, bool)):
        return text
    if text.startswith("@"):
        return str(parse_time(str(value).strip()[1:], name))
    raise ConfigError(f"{name}: expected earliest, latest or a time in epoch milliseconds, got {value!r}")


def parse_start_flag(value: Any, name: str) -> str:
    """--offset of a load or stream: as `parse_starting`, but a bare number is refused, since --offset of
    `consume` reads it as an offset and a new sink starts every partition at one point."""
    if str(value).strip().isdigit():
        raise ConfigError(f"{name}: expected earliest, latest or @TIME (epoch milliseconds or ISO-8601), "
                          f"got {value!r}")
    return parse_starting(value, name)


def parse_property(value: Any, name: str) -> str:
    """A Kafka client property's value: Java properties are strings, and TOML's booleans read as Kafka's
    lowercase words."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"{name}: expected a string, number or boolean, got {value!r}")

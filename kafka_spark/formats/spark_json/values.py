"""What both of `from_json`'s emulations share: the refusal `NotCertain`, a field's converter, and a column
converted value by value when Arrow refuses it whole (spark_json.py, spark_json_typed.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

Converter = Callable[[Any], Any]


class NotCertain(ValueError):
    """A value this parser cannot be sure Spark's `from_json` parses to what it would produce: why, and its row
    in the column (None inside a value)."""

    def __init__(self, reason: str, row: int | None = None) -> None:
        super().__init__(reason)
        self.reason, self.row = reason, row


def converted_column(column: list[Any], convert: Converter, name: str, target: pa.DataType) -> pa.Array:
    """A column Arrow refused, each value through its field's converter, which rounds a decimal as Spark does
    or says why the value is not Spark's for certain (NotCertain naming the field and the row)."""
    converted = []
    for row, item in enumerate(column):
        try:
            converted.append(None if item is None else convert(item))
        except (ValueError, OverflowError, pa.ArrowException) as exc:  # NotCertain is a ValueError
            raise NotCertain(f"field {name}: {getattr(exc, 'reason', exc)}"[:300], row) from None
    return pa.array(converted, target)

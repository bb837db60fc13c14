"""Errors of the Delta backend; the sink's own are in sink/errors.py."""

from __future__ import annotations

from kafka_spark.sink.errors import TableLogError


class DeltaLogError(TableLogError):
    """The table's Delta log cannot be read, or lacks a commit the sink's position needs."""

"""Errors of the Delta backend; the sink's own are in sink/errors.py."""

from __future__ import annotations

from kafka_spark.errors import ConfigError
from kafka_spark.sink.errors import SinkError, TableLogError


class DeltaLogError(TableLogError):
    """The table's Delta log cannot be read, or lacks a commit the sink's position needs."""


class MaintenanceError(SinkError):
    """A compaction or vacuum of a Delta table failed (delta-rs refused it, or the table's store did)."""


class NoTableError(ConfigError):
    """No Delta table is at the location given (nothing has been committed there yet)."""

"""Delta tables in a catalog: finding a named table's location, creating it (names: sink/table_names.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.spark.versions import require_delta_spark


def catalog_location(spark: Any, name: str) -> str | None:
    """The location of the Delta table `name` (DESCRIBE DETAIL), or None when the catalog has no such table."""
    if not spark.catalog.tableExists(name):
        return None
    detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
    if detail is None or (detail["format"] or "").lower() != "delta" or not detail["location"]:
        kind = detail["format"] if detail is not None and detail["format"] else "not a table with files"
        raise ConfigError(f"table {name} is not a Delta table ({kind})")
    return str(detail["location"])


def create_catalog_table(spark: Any, name: str, schema: Any, partition_by: Sequence[str] = ()) -> str:
    """Create the Delta table `name` (unless it exists) with `schema`, as `saveAsTable` would; its location."""
    require_delta_spark(f"creating the catalog table {name} (Delta's DeltaTable API)", spark)
    from delta.tables import DeltaTable

    builder = DeltaTable.createIfNotExists(spark).tableName(name).addColumns(schema)
    if partition_by:
        builder = builder.partitionedBy(*partition_by)
    try:
        builder.execute()
    except Exception as exc:  # py4j carries Delta's AnalysisException under several types
        if "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION" not in str(exc):
            raise
        # Delta writes the new table's log before the catalog entry: a run stopped between the two, or a
        # dropped table's files, leave the managed location taken. Which one it is is the user's call.
        raise ConfigError(
            f"cannot create table {name}: the catalog has no such table, but its managed location is not empty "
            "(a first load stopped while creating it, or files left by a dropped table). Remove that directory "
            f"to start afresh, or register it: CREATE TABLE {name} USING delta LOCATION '<the directory>'") from None
    location = catalog_location(spark, name)
    if location is None:
        raise ConfigError(f"table {name} was created but the catalog does not find it")
    return location

"""Catalog tables by name: telling a name from a path, finding a named table's location, creating it.

The rule: a table is a catalog name when it is two or three dot-separated identifiers — `db.table` or
`catalog.db.table` — with no scheme and no '/'. An identifier is letters, digits and underscores (not
starting with a digit), or any text but '/' and '`' in backticks (`` `my-db`.orders ``). Everything else
is a path: `orders`, `./db.orders` (a relative directory that looks like a name), `/lake/orders`,
`file:/lake/orders`, `s3a://lake/orders`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.spark.versions import require_delta_spark

_IDENTIFIER = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`/]+`)"
_NAME = re.compile(rf"^{_IDENTIFIER}(?:\.{_IDENTIFIER}){{1,2}}$")


def is_table_name(table: str) -> bool:
    """Whether `table` names a catalog table (`db.table`, `catalog.db.table`) rather than a path."""
    return bool(_NAME.match(table.strip()))


def name_parts(name: str) -> list[str]:
    """The identifiers of a catalog name (`is_table_name`), backticks removed: `a.`b-c`` -> ['a', 'b-c']."""
    return [part.strip("`") for part in re.findall(rf"{_IDENTIFIER}", name.strip())]


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

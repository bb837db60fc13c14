"""Where a Delta table is and how each reader reaches it: Spark's path, delta-rs's URI and options, the kept files.

`locate(table, conf)` takes what a user gives as a table — a path, a store URI or a catalog name (see
`catalog.is_table_name`) — and `conf`, the Hadoop settings to reach the store with: a SparkSession
(whose settings Delta itself uses), a mapping of `fs.*` / `spark.hadoop.fs.*` keys, or None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.delta.catalog import catalog_location
from kafka_spark.delta.storage import arrow_filesystem, delta_rs_location
from kafka_spark.delta.table_state import TableState
from kafka_spark.errors import ConfigError
from kafka_spark.sink.table_files import ArrowFiles, HadoopFiles, LocalFiles, TableFiles, local_path
from kafka_spark.sink.table_names import is_table_name


@dataclass(frozen=True)
class TableLocation:
    """A Delta table's location (`path`, as Spark writes it) and, for a catalog table, its `name`."""

    path: str
    files: TableFiles = field(compare=False)
    delta_rs_uri: str = ""
    storage_options: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    name: str | None = None

    def __str__(self) -> str:
        return self.name or self.path

    def state(self) -> TableState:
        """The table's Delta log, read with delta-rs."""
        return TableState(self.delta_rs_uri or self.path, self.storage_options)


def _is_session(conf: Any) -> bool:
    return conf is not None and not isinstance(conf, Mapping)


def path_location(path: str | os.PathLike[str], conf: Any = None, name: str | None = None) -> TableLocation:
    """The location of the table at `path`, its store reached with `conf` (a SparkSession, Hadoop settings or None)."""
    text = str(path)
    local = local_path(text)
    if local is not None:
        return TableLocation(path=text, files=LocalFiles(local), delta_rs_uri=text, name=name)
    uri, options = delta_rs_location(text, conf)
    if _is_session(conf):
        files: TableFiles = HadoopFiles(conf, text)
    else:
        try:
            fs, root = arrow_filesystem(text, conf or {})
        except Exception as exc:  # pyarrow's errors for a store it cannot open (no libhdfs, ...) vary by store
            raise ConfigError(f"{text}: the files beside the table cannot be reached without Spark "
                              f"({type(exc).__name__}); run under spark-submit") from None
        files = ArrowFiles(text, fs, root)
    return TableLocation(path=text, files=files, delta_rs_uri=uri, storage_options=options, name=name)


def locate(table: str | os.PathLike[str] | TableLocation, conf: Any = None) -> TableLocation | None:
    """The table's location; None for a catalog name whose table does not exist yet."""
    if isinstance(table, TableLocation):
        return table
    if isinstance(table, Path) or not is_table_name(str(table)):
        return path_location(table, conf)
    name = str(table).strip()
    if not _is_session(conf):
        raise ConfigError(f"{name} is a catalog table name: finding its location needs Spark. Give the table's "
                          f"location instead (DESCRIBE DETAIL {name} shows it), or run under spark-submit")
    location = catalog_location(conf, name)
    return None if location is None else path_location(location, conf, name=name)


def submitted_session() -> Any | None:
    """The driver's SparkSession when this process was started by spark-submit, else None (no JVM started)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()

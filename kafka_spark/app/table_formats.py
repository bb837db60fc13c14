"""Which table format a load or a stream writes, Delta Lake (the default) or Apache Iceberg, and where the Iceberg
tables are: the settings, what Iceberg does not take yet, and the format's entry points the applications call.

The Iceberg catalog is given as pyiceberg users give one: its name (`iceberg-catalog`), pyiceberg's catalog
properties under their own names (`type`, `uri`, `warehouse`, `credential`, `s3.endpoint`, ...) in an `[iceberg]`
table of the config file or `--iceberg-property KEY=VALUE`, with `iceberg-catalog-uri` and `iceberg-warehouse`
as keys and flags of their own for the two every catalog has. A catalog that pyiceberg's own configuration names
(`.pyiceberg.yaml`, `PYICEBERG_CATALOG__<NAME>__<KEY>`) is found by its name, the settings above over it; with a
warehouse directory alone, the catalog is the embedded SQL catalog on a SQLite file in it.

Catalog properties may hold credentials: they are never part of a repr, a printed line or an error.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from kafka_spark.app.model import SAMPLE_TABLE, AppConfig
from kafka_spark.app.values import Parser, parse_property, parse_text
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.catalog import DEFAULT_NAME, IcebergCatalog
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.options import LoadOptions, StreamOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.routing import PLACEHOLDER
from kafka_spark.sink.run_result import MultiLoadResult
from kafka_spark.sink.table_names import is_table_name

TABLE_FORMATS = ("delta", "iceberg")
ICEBERG = "iceberg"
ICEBERG_TABLE = "iceberg"  # the config file's table of pyiceberg catalog properties
ICEBERG_PROPERTY_FLAG = "--iceberg-property"
# The demo's Iceberg table and catalog, when no broker, no table and no catalog are given: a table needs a name
# in a catalog, and the embedded catalog a directory (under the one the run starts from, as the Delta demo's).
ICEBERG_SAMPLE_TABLE = "demo.page_views"
SAMPLE_WAREHOUSE = Path("data") / "warehouse"
# Properties that say which catalog pyiceberg opens; without one, there is no catalog to write to.
_CATALOG_CHOICE = ("type", "uri", "warehouse", "py-catalog-impl")


def parse_table_format(value: Any, name: str) -> str:
    text = parse_text(value, name).lower()
    if text not in TABLE_FORMATS:
        raise ConfigError(f"{name}: expected {' or '.join(TABLE_FORMATS)}, got {value!r}")
    return text


# Config file key -> (config attribute, parser); each is a flag of the same name and a KAFKA_SPARK_* variable.
TABLE_FORMAT_KEYS: dict[str, tuple[str, Parser]] = {
    "table-format": ("table_format", parse_table_format),
    "iceberg-catalog": ("iceberg_catalog", parse_text),
    "iceberg-catalog-uri": ("iceberg_catalog_uri", parse_text),
    "iceberg-warehouse": ("iceberg_warehouse", parse_text),
}


def iceberg_table(value: Any, where: str) -> dict[str, str]:
    """The `[iceberg]` table of a config file as pyiceberg properties. TOML reads `s3.endpoint = ...` as a
    table `s3` holding `endpoint`: nested tables are joined back into the dotted names pyiceberg uses."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{ICEBERG_TABLE}] must be a table of pyiceberg catalog properties "
                          "(type, uri, warehouse, credential, s3.endpoint, ...)")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            out.update({f"{key}.{k}": v for k, v in iceberg_table(item, where).items()})
        else:
            # The message names the key only: the value may be a credential.
            out[str(key)] = parse_property(item if isinstance(item, bool | int | float | str) else None,
                                           f"{where}: {ICEBERG_TABLE}.{key}")
    return out


def iceberg_overrides(items: list[str]) -> dict[str, str]:
    """--iceberg-property KEY=VALUE items as pyiceberg properties."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{ICEBERG_PROPERTY_FLAG}: expected KEY=VALUE (a pyiceberg catalog property), "
                              f"got {key.strip()!r} with no '='")
        out[key.strip()] = value
    return out


def _iceberg_given(config: AppConfig) -> list[str]:
    return [name for name, value in (("--iceberg-catalog", config.iceberg_catalog),
                                     ("--iceberg-catalog-uri", config.iceberg_catalog_uri),
                                     ("--iceberg-warehouse", config.iceberg_warehouse),
                                     (f"[{ICEBERG_TABLE}] or {ICEBERG_PROPERTY_FLAG}", config.iceberg)) if value]


def _unsupported(config: AppConfig) -> list[tuple[str, str]]:
    """(option, why) of every setting given that the Iceberg sink does not take in this version."""
    return [(flag, why) for flag, value, why in (
        ("--log-dirs", getattr(config, "log_dirs", None), "back-fills from Kafka's log directories write Delta "
                                                          "tables only in this version"),
        ("--cdc", config.cdc, "change streams are applied with Delta's MERGE; Iceberg tables are appended to in "
                              "this version"),
        ("--vacuum-retention-hours", getattr(config, "vacuum_retention_hours", None), "a stream vacuums Delta "
                                                                                  "tables only; expire an Iceberg "
                                                                                  "table's snapshots with its own "
                                                                                  "maintenance"),
    ) if value]


def check_table_format(config: AppConfig) -> None:
    """The table format's settings agree with the others; every error names the setting."""
    if config.table_format != ICEBERG:
        given = _iceberg_given(config) + (["--writer pyiceberg"] if config.writer == "pyiceberg" else [])
        if given:
            raise ConfigError(f"{given[0]}: only with --table-format iceberg (these tables are Delta tables)")
        return
    if importlib.util.find_spec("pyiceberg") is None:
        raise ConfigError("--table-format iceberg needs pyiceberg: pip install 'kafka-spark[iceberg]'")
    for flag, why in _unsupported(config):
        raise ConfigError(f"{flag}: {why}")
    named = [("--table", config.table), ("--table-template", config.table_template),
             *((f"[tables].{topic}", table) for topic, table in config.tables.items()),
             ("--dead-letter", config.dead_letter),
             *((f"[topics.{topic}].dead-letter", s.get("dead_letter")) for topic, s in config.topic_settings.items())]
    for flag, table in named:
        if table and not is_table_name(table.replace(PLACEHOLDER, "t")):
            raise ConfigError(f"{flag}: {table!r} is a path; an Iceberg table is named in its catalog as "
                              "namespace.table (such as bronze.orders, or bronze.{topic} for a table per topic)")
    iceberg_catalog(config).catalog_properties()  # its own refusals (a warehouse the embedded catalog cannot use)


def pyiceberg_configuration(name: str) -> dict[str, str]:
    """The properties pyiceberg's own configuration (.pyiceberg.yaml, PYICEBERG_CATALOG__* variables) gives the
    catalog `name`; pyiceberg merges them again when it opens the catalog, under the ones given here."""
    from pyiceberg.utils.config import Config

    try:
        found = Config().get_catalog_config(name) or {}
    except Exception as exc:  # a malformed file; its text is left out, as it may quote a credential
        raise ConfigError(f"pyiceberg's configuration (.pyiceberg.yaml, PYICEBERG_* variables) cannot be read: "
                          f"{type(exc).__name__}") from None
    return {str(k): str(v) for k, v in found.items() if isinstance(v, str | int | float | bool)}


def iceberg_catalog(config: AppConfig) -> IcebergCatalog:
    """The run's Iceberg catalog: pyiceberg's configuration of its name, then `[iceberg]` and
    --iceberg-property, then iceberg-catalog-uri and iceberg-warehouse; the demo's directory when nothing names
    a catalog and no broker is given."""
    name = config.iceberg_catalog or DEFAULT_NAME
    props = {**pyiceberg_configuration(name), **config.iceberg}
    if config.iceberg_catalog_uri:
        props["uri"] = config.iceberg_catalog_uri
    if config.iceberg_warehouse:
        props["warehouse"] = config.iceberg_warehouse
    if not any(props.get(k) for k in _CATALOG_CHOICE):
        if not config.embedded:
            raise ConfigError("--table-format iceberg: give the Iceberg catalog: --iceberg-warehouse DIR (the "
                              "embedded SQLite catalog, in DIR), --iceberg-catalog-uri URI, pyiceberg properties in "
                              f"[{ICEBERG_TABLE}] or {ICEBERG_PROPERTY_FLAG}, or --iceberg-catalog NAME of a catalog "
                              "in pyiceberg's configuration (.pyiceberg.yaml)")
        props["warehouse"] = str(SAMPLE_WAREHOUSE.resolve())
    warehouse, uri = props.pop("warehouse", None), props.pop("uri", None)
    return IcebergCatalog(warehouse=warehouse, uri=uri, properties=props, name=name)


class RunFormat(ABC):
    """The table format a run writes, as the applications use it."""

    name: str
    version_label: str  # what a result's `table_version` is, in a printed line
    sample_table: str  # the demo's table

    @abstractmethod
    def load(self, spark: Any, options: LoadOptions) -> LoadResult: ...

    @abstractmethod
    def load_tables(self, spark: Any, options: LoadOptions) -> MultiLoadResult: ...

    @abstractmethod
    def start_stream(self, spark: Any, options: StreamOptions) -> Any: ...

    @abstractmethod
    def tables_lag(self, options: LoadOptions, spark: Any) -> dict[str, SinkLag | None]: ...

    @abstractmethod
    def position(self, table: str, sink_id: str, spark: Any) -> SinkCommit | None: ...

    def offsets_command(self, table: str, bootstrap: str) -> str | None:
        """A command that shows the table's committed offsets and lag, where there is one."""
        return None

    def summary(self) -> dict[str, Any]:
        """What --json output says of the format."""
        return {"table_format": self.name}

    def start_over(self, table: str) -> str:
        """How the demo's table is emptied, so that a fresh broker's topic loads from its start."""
        return f"drop {table} to start over"


class DeltaRun(RunFormat):
    name, version_label, sample_table = "delta", "Delta version", str(SAMPLE_TABLE)

    def load(self, spark: Any, options: LoadOptions) -> LoadResult:
        from kafka_spark.delta import load

        return load(spark, options)

    def load_tables(self, spark: Any, options: LoadOptions) -> MultiLoadResult:
        from kafka_spark.delta import load_tables

        return load_tables(spark, options)

    def start_stream(self, spark: Any, options: StreamOptions) -> Any:
        from kafka_spark.delta import start_stream

        return start_stream(spark, options)

    def tables_lag(self, options: LoadOptions, spark: Any) -> dict[str, SinkLag | None]:
        from kafka_spark.delta import tables_lag

        return tables_lag(options, spark)

    def position(self, table: str, sink_id: str, spark: Any) -> SinkCommit | None:
        from kafka_spark.delta import committed_position

        return committed_position(table, sink_id, spark)

    def offsets_command(self, table: str, bootstrap: str) -> str | None:
        return f"kafka-spark delta-offsets {table} -b {bootstrap}"

    def start_over(self, table: str) -> str:
        return f"delete {table} to start over"


class IcebergRun(RunFormat):
    name, version_label, sample_table = ICEBERG, "Iceberg sequence number", ICEBERG_SAMPLE_TABLE

    def __init__(self, catalog: IcebergCatalog) -> None:
        self.catalog = catalog

    def __repr__(self) -> str:
        return f"IcebergRun({self.catalog!r})"  # the catalog's repr hides its secrets

    def load(self, spark: Any, options: LoadOptions) -> LoadResult:
        from kafka_spark.iceberg import load

        return load(spark, options, self.catalog)

    def load_tables(self, spark: Any, options: LoadOptions) -> MultiLoadResult:
        from kafka_spark.iceberg import load_tables

        return load_tables(spark, options, self.catalog)

    def start_stream(self, spark: Any, options: StreamOptions) -> Any:
        from kafka_spark.iceberg import start_stream

        return start_stream(spark, options, self.catalog)

    def tables_lag(self, options: LoadOptions, spark: Any) -> dict[str, SinkLag | None]:
        from kafka_spark.iceberg import tables_lag

        return tables_lag(options, self.catalog, spark)

    def position(self, table: str, sink_id: str, spark: Any) -> SinkCommit | None:
        from kafka_spark.iceberg import committed_position

        return committed_position(table, sink_id, self.catalog)

    def offsets_command(self, table: str, bootstrap: str) -> str | None:
        # Only a catalog its flags name without credentials: the embedded one's warehouse, or a catalog of
        # pyiceberg's own configuration by its name.
        if self.catalog.uri is None and self.catalog.warehouse and not self.catalog.properties:
            return f"kafka-spark iceberg-offsets {table} -b {bootstrap} --iceberg-warehouse {self.catalog.warehouse}"
        if self.catalog.name != DEFAULT_NAME:
            return f"kafka-spark iceberg-offsets {table} -b {bootstrap} --iceberg-catalog {self.catalog.name}"
        return None

    def summary(self) -> dict[str, Any]:
        # The catalog's name only: its properties may hold credentials.
        return {"table_format": self.name, "catalog": self.catalog.name}

    def start_over(self, table: str) -> str:
        return f"drop {table} from the Iceberg catalog {self.catalog.name!r} to start over"


def run_format(config: AppConfig) -> RunFormat:
    """The format the run writes (its settings checked by `check_table_format`)."""
    return IcebergRun(iceberg_catalog(config)) if config.table_format == ICEBERG else DeltaRun()


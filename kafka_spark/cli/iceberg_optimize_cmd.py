"""`kafka-spark optimize --table-format iceberg`: an Iceberg table's small data files compacted, for one table (or
several), the tables of a table per topic, or those of a load's or stream's settings file.

The tables are chosen as `kafka-spark iceberg-offsets` chooses them: named namespace.table in their catalog (the
catalog flags, or a --config file's `[iceberg]` table and iceberg-* keys), or a routing's tables over the topics on
the brokers now. Each is compacted with `compact_iceberg_table` (kafka_spark/iceberg/compaction.py): one snapshot
of Iceberg's `replace` operation that changes no row and no sink's position, read and written with pyiceberg (no
Spark, no JVM). Vacuuming is not this sink's business for Iceberg tables: snapshot expiry and orphan-file removal
are Iceberg's own maintenance. Catalog credentials are never printed.

optimize_cmd.py owns the flags and the per-table report; this module only selects and compacts Iceberg tables, so
it imports nothing of optimize_cmd (no cycle).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_spark.app.model import AppConfig
from kafka_spark.app.table_formats import (
    ICEBERG,
    IcebergRun,
    iceberg_catalog,
    iceberg_overrides,
    parse_table_format,
)
from kafka_spark.cli.delta_offsets_cmd import offsets_config, routed_options
from kafka_spark.cli.metadata_cmd import client_props
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.catalog import IcebergCatalog

if TYPE_CHECKING:
    from kafka_spark.sink.results import Compaction

FORMAT_VARIABLE = "KAFKA_SPARK_TABLE_FORMAT"
CATALOG_FLAGS = ("iceberg_catalog", "iceberg_catalog_uri", "iceberg_warehouse", "iceberg_properties")
VACUUM_REFUSED = ("kafka-spark vacuum serves Delta tables only: an Iceberg table's unused files go with Iceberg's "
                  "own maintenance, expiring its old snapshots (Spark's expire_snapshots procedure, or pyiceberg's "
                  "table.maintenance.expire_snapshots()) and then removing its orphan files (Spark's "
                  "remove_orphan_files procedure)")


class NoIcebergTableError(ConfigError):
    """The catalog has no table of the name given (a routed table whose first commit has not come yet)."""


def _file_format(path: str) -> str:
    """The table format of a load's or stream's settings file, as offsets_config (delta_offsets_cmd.py) reads it."""
    from kafka_spark.app.config import read_config_file
    from kafka_spark.app.settings import LOAD_KEYS, STREAM_KEYS

    # a file that names no format holds the default format's tables (the environment's, else Delta's)
    config = AppConfig(table_format=(os.environ.get(FORMAT_VARIABLE) or AppConfig().table_format).lower())
    read_config_file(path, config, {**STREAM_KEYS, **LOAD_KEYS})
    return config.table_format


def chosen_format(args: argparse.Namespace) -> str:
    """The format of the tables the flags select: --table-format, else the --config file's, else the
    environment's KAFKA_SPARK_TABLE_FORMAT, else Delta."""
    given = parse_table_format(args.table_format, "--table-format") if args.table_format else None
    if args.config:
        found = _file_format(args.config)
        if given is not None and given != found:
            raise ConfigError(f"{args.config}: table-format {found}, but --table-format {given}: the file's tables "
                              f"are {found.capitalize()} tables")
        return found
    if given is not None:
        return given
    return parse_table_format(os.environ.get(FORMAT_VARIABLE) or AppConfig().table_format, FORMAT_VARIABLE)


def refuse_catalog_flags(args: argparse.Namespace) -> None:
    """ConfigError for catalog flags given for Delta tables, which have no catalog of this kind."""
    for flag in CATALOG_FLAGS:
        if getattr(args, flag, None):
            name = "--iceberg-property" if flag == "iceberg_properties" else "--" + flag.replace("_", "-")
            raise ConfigError(f"{name}: only with --table-format iceberg (these tables are Delta tables)")


def _config(args: argparse.Namespace) -> AppConfig:
    """The --config file's settings (none without one) with the catalog flags over them."""
    config = offsets_config(args, ICEBERG, "optimize")
    for flag in ("iceberg_catalog", "iceberg_catalog_uri", "iceberg_warehouse"):
        if getattr(args, flag, None):
            setattr(config, flag, getattr(args, flag))
    config.iceberg.update(iceberg_overrides(args.iceberg_properties or []))
    # a broker given on the command line is no demo: the catalog must then be named too
    config.bootstrap_servers = client_props(args).get("bootstrap.servers") or config.bootstrap_servers
    return config


def selected_tables(args: argparse.Namespace, config: AppConfig) -> tuple[list[str], bool]:
    """The Iceberg tables the flags select, and whether they are a set (whose tables not created yet are passed
    over): --table (a --config file then gives the catalog), else --table-template or the file's routing, else the
    file's one table."""
    from kafka_spark.app.routing import routed
    from kafka_spark.sink.routed import routed_table_names

    # These reach Delta tables on a file system; an Iceberg table is found through its catalog.
    if args.root:
        raise ConfigError("--root: Delta tables only; name Iceberg tables with --table or --table-template")
    if args.hadoop:
        raise ConfigError("--conf: Hadoop settings reach Delta tables; give an Iceberg table's store settings as "
                          "catalog properties (--iceberg-property s3.endpoint=..., or --config's [iceberg])")
    if args.table and args.table_template:
        raise ConfigError("give --table, or --table-template (a table per topic), not both")
    if args.table_template or (routed(config) and not args.table):
        return routed_table_names(routed_options(args, config)), True
    tables = list(dict.fromkeys(args.table)) if args.table else [config.table] if config.table else []
    if not tables:
        raise ConfigError(f"{args.config}: no table, table-template or [tables]: give --table or --table-template"
                          if args.config else "give the tables: --table, --table-template or --config")
    if args.topic or args.pattern:
        raise ConfigError("--topic and --pattern only with --table-template or --config")
    return tables, False


def compact(table: str, catalog: IcebergCatalog, target_size: int | None, dry_run: bool) -> Compaction:
    """One table compacted (or, `dry_run`, its plan); NoIcebergTableError when the catalog has no such table."""
    from kafka_spark.iceberg.compaction import compact_iceberg_table
    from kafka_spark.iceberg.position import IcebergLocation

    identifier = _check_exists(table, catalog)
    return compact_iceberg_table(IcebergLocation(catalog, identifier), target_size=target_size, dry_run=dry_run)


def _check_exists(table: str, catalog: IcebergCatalog) -> tuple[str, ...]:
    """The table's identifier in the catalog; NoIcebergTableError when the catalog has no such table."""
    identifier = catalog.identifier(table)
    if not catalog.open().table_exists(identifier):
        raise NoIcebergTableError(f"{table}: the Iceberg catalog {catalog.name!r} has no such table")
    return identifier


def optimize_tables(args: argparse.Namespace, target_size: int | None
                    ) -> tuple[list[str], bool, Callable[[str], Compaction], Callable[[Compaction], str]]:
    """The tables to compact, whether they are a set, the compaction of one and its line of output."""
    config = _config(args)
    catalog = iceberg_catalog(config)
    tables, is_set = selected_tables(args, config)
    if not is_set:
        # Tables named one by one are all checked before any is compacted: a misspelt name changes nothing.
        for table in tables:
            _check_exists(table, catalog)

    def act(table: str) -> Compaction:
        return compact(table, catalog, target_size, args.dry_run)

    def line(done: Compaction) -> str:
        return f"{done.table}: {done.text(IcebergRun.version_label)} in {done.seconds:.1f}s"

    return tables, is_set, act, line

"""`kafka-spark iceberg-offsets`: the Kafka offsets an Iceberg table holds, per sink, and with a broker their lag.

The table is found in its catalog, named as the loads name it (`--iceberg-warehouse DIR` for the embedded SQLite
catalog, `--iceberg-catalog-uri`, `--iceberg-property`, `--iceberg-catalog NAME` of pyiceberg's configuration, or
a --config file's `[iceberg]` table); the positions come from its snapshot summaries (and the records kept beside
it once expiry removed those), read with pyiceberg: no Spark, no JVM. With `--table-template` (or a --config file
of a table per topic), every table the routing makes of the topics on the brokers now. Catalog credentials are
never printed.
"""

from __future__ import annotations

import argparse

from kafka_spark.app.arguments import add_iceberg_catalog_options
from kafka_spark.app.config import client_properties
from kafka_spark.app.flags import add_sink_id_option, add_topic_options
from kafka_spark.app.model import AppConfig
from kafka_spark.app.table_formats import iceberg_catalog, iceberg_overrides
from kafka_spark.cli.delta_offsets_cmd import offsets_config, routed_options
from kafka_spark.cli.metadata_cmd import add_client_args, client_props, has_cluster
from kafka_spark.cli.positions_report import print_lags, print_positions, print_tables
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.catalog import IcebergCatalog
from kafka_spark.iceberg.position import table_positions
from kafka_spark.sink.lag import only_sink, positions_lag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("iceberg-offsets", help="Kafka offsets committed in an Iceberg table per sink; lag with -b")
    p.add_argument("table", nargs="?", help="the Iceberg table, namespace.table in its catalog")
    p.add_argument("--table-template", metavar="TEMPLATE",
                   help="instead of a table, every table of a load or stream with a table per topic (with "
                        "{topic}: bronze.{topic}), over the topics of --topic or --pattern; needs -b")
    add_topic_options(p, what="with --table-template, a topic")
    p.add_argument("--config", metavar="FILE",
                   help="the load's or stream's TOML file (table-format iceberg): its catalog ([iceberg], "
                        "iceberg-*), table-template, [tables], topics or pattern, sink-id and [kafka] (flags win)")
    add_sink_id_option(p, "only this sink id (with --table-template or --config: the tables' sink, default: "
                          "default)")
    add_iceberg_catalog_options(p)
    add_client_args(p)
    p.set_defaults(run=run)


def _config(args: argparse.Namespace) -> AppConfig:
    """The --config file's settings with the catalog flags over them."""
    config = offsets_config(args, "iceberg", "iceberg-offsets")
    config.table_format = "iceberg"
    for flag in ("iceberg_catalog", "iceberg_catalog_uri", "iceberg_warehouse"):
        if getattr(args, flag, None):
            setattr(config, flag, getattr(args, flag))
    config.iceberg.update(iceberg_overrides(args.iceberg_properties or []))
    return config


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    props = {**client_properties(config), **client_props(args)}
    # a broker given on the command line is no demo: the catalog must then be named too
    config.bootstrap_servers = props.get("bootstrap.servers") or config.bootstrap_servers
    catalog = iceberg_catalog(config)
    if args.table_template and args.table:
        raise ConfigError("give a table, or --table-template (a table per topic), not both")
    if args.table_template or (args.config and not args.table):
        return _routed(args, config, catalog)
    if not args.table:
        raise ConfigError("give the table, or --table-template (a table per topic)")
    if args.topic or args.pattern:
        raise ConfigError("--topic and --pattern only with --table-template or --config")
    from pyiceberg.exceptions import NoSuchTableError

    try:
        table = catalog.open().load_table(catalog.identifier(args.table))  # a path names no Iceberg table
    except NoSuchTableError:
        raise ConfigError(f"{args.table}: the Iceberg catalog {catalog.name!r} has no such table") from None
    positions = only_sink(table_positions(table), args.sink_id, args.table)
    if has_cluster(props):
        return print_lags(args.table, positions_lag(positions, props), args.json)
    return print_positions(args.table, positions, args.json)


def _routed(args: argparse.Namespace, config: AppConfig, catalog: IcebergCatalog) -> int:
    from kafka_spark.iceberg import tables_lag

    options = routed_options(args, config)
    return print_tables(options, tables_lag(options, catalog), args.json)

"""`kafka-spark delta-offsets`: the Kafka offsets a Delta table holds, per sink, and with a broker their lag.

With `--table-template` (or a `--config` file of the load or stream with a table per topic), every
table the routing makes of the topics on the brokers now, with its position and lag.

Everything comes from the table's own files (its Delta log, read with delta-rs, and the kept offsets);
no Spark, no JVM. A table on an object store is reached with the Hadoop settings the user gives Spark
(`--conf spark.hadoop.fs.s3a.endpoint=...`, or `fs.s3a....`) and the AWS SDK's environment variables;
secrets are never printed. Run under spark-submit, the command uses the driver's SparkSession instead:
its Hadoop settings, and its catalog for a table given by name.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from kafka_spark.app.flags import add_sink_id_option, add_topic_options, topics_of
from kafka_spark.app.model import AppConfig
from kafka_spark.cli.metadata_cmd import add_client_args, client_props, has_cluster
from kafka_spark.cli.positions_report import print_lags, print_positions, print_tables
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.location import TableLocation, locate, submitted_session
from kafka_spark.delta.position import committed_positions
from kafka_spark.delta.sink import tables_lag
from kafka_spark.delta.storage import environment_hadoop_conf
from kafka_spark.errors import ConfigError
from kafka_spark.sink.lag import only_sink
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.table_files import local_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("delta-offsets", help="Kafka offsets committed in a Delta table per sink; lag with -b")
    p.add_argument("table", nargs="?",
                   help="the Delta table: a directory, a file: URI, a store URI (s3a://, abfss://, gs://, "
                        "hdfs://), or under spark-submit a catalog name (db.table)")
    p.add_argument("--table-template", metavar="TEMPLATE",
                   help="instead of a table, every table of a load or stream with a table per topic (with "
                        "{topic}), over the topics of --topic or --pattern; needs -b")
    add_topic_options(p, what="with --table-template, a topic")
    p.add_argument("--config", metavar="FILE",
                   help="the load's or stream's TOML file: its table-template, [tables], topics or pattern, "
                        "sink-id and [kafka] (flags win)")
    add_sink_id_option(p, "only this sink id (with --table-template or --config: the tables' sink, default: "
                          "default)")
    p.add_argument("--conf", dest="hadoop", action="append", default=[], metavar="KEY=VALUE",
                   help="a Hadoop setting of the table's store, as given to Spark (spark.hadoop.fs.s3a.endpoint=... "
                        "or fs.s3a.endpoint=...), repeatable; AWS_* environment variables are read too")
    add_client_args(p)
    p.set_defaults(run=run)


def hadoop_settings(items: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """Hadoop settings from the AWS environment variables, then `--conf KEY=VALUE` flags over them.

    `spark.hadoop.` prefixes are dropped; other `spark.*` settings are ignored, so the flags of a
    spark-submit command can be given as they are.
    """
    conf = environment_hadoop_conf(environ)
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().removeprefix("spark.hadoop.")
        if not sep or not key:
            raise ConfigError("--conf: expected KEY=VALUE")  # the text may hold a secret: not repeated
        if key.startswith("spark."):
            continue
        if not key.startswith("fs."):
            raise ConfigError(f"--conf {key}: expected a Hadoop file system setting (fs.* or spark.hadoop.fs.*)")
        conf[key] = value.strip()
    return conf


def _locate(args: argparse.Namespace) -> TableLocation:
    location = locate(args.table, submitted_session() or hadoop_settings(args.hadoop, os.environ))
    if location is None:
        raise ConfigError(f"{args.table}: the catalog has no such table")
    if location.state().refresh() is not None:
        return location
    path = local_path(location.path)
    if path is not None and not path.exists():
        raise ConfigError(f"{args.table}: no such table directory")
    raise ConfigError(f"{args.table} is not a Delta table (no commit in its _delta_log)")


def run(args: argparse.Namespace) -> int:
    if args.table_template or args.config:
        if args.table:
            raise ConfigError("give a table, or --table-template / --config (a table per topic), not both")
        return routed_offsets(args)
    if not args.table:
        raise ConfigError("give the table, or --table-template (a table per topic)")
    if args.topic or args.pattern:
        raise ConfigError("--topic and --pattern only with --table-template or --config")
    location = _locate(args)
    props = client_props(args)
    if has_cluster(props):
        lags = table_lag(location, props, args.sink_id)
        return print_lags(args.table, lags, args.json)
    return print_positions(args.table, only_sink(committed_positions(location), args.sink_id, args.table), args.json)


def offsets_config(args: argparse.Namespace, table_format: str, command: str) -> AppConfig:
    """The --config file's settings (none without one), refused when its tables are of another format."""
    from kafka_spark.app.config import read_config_file
    from kafka_spark.app.settings import LOAD_KEYS, STREAM_KEYS

    config = AppConfig(table_format=table_format)
    if args.config:
        # a file that names no format holds the default format's tables (the environment's, else Delta's)
        config.table_format = (os.environ.get("KAFKA_SPARK_TABLE_FORMAT") or AppConfig().table_format).lower()
        read_config_file(args.config, config, {**STREAM_KEYS, **LOAD_KEYS})
    if config.table_format != table_format:
        other = "kafka-spark iceberg-offsets" if config.table_format == "iceberg" else "kafka-spark delta-offsets"
        raise ConfigError(f"{args.config}: table-format {config.table_format}: {command} reads "
                          f"{table_format.capitalize()} tables; use {other}")
    return config


def routed_options(args: argparse.Namespace, config: AppConfig | None = None) -> LoadOptions:
    """The routed options of the flags over the --config file (`config`, read here when not given): the
    routing, topics, sink and client settings."""
    from kafka_spark.app.config import client_properties
    from kafka_spark.app.routing import build_routing, check_routing, parse_template, routed, routed_topics

    if config is None:
        config = offsets_config(args, "delta", "delta-offsets")
    if args.table_template:
        config.table_template, config.table = parse_template(args.table_template, "--table-template"), None
    if args.topic or args.pattern:
        config.topics, config.pattern = topics_of(args), args.pattern
    if args.sink_id:
        config.sink_id = args.sink_id
    if not routed(config):
        raise ConfigError(f"{args.config}: no table-template and no [tables]: give --table-template, or the "
                          "table itself")
    props = {**client_properties(config), **client_props(args)}
    if not has_cluster(props):
        raise ConfigError("--table-template needs --bootstrap-server (the tables are those of the topics on the "
                          "brokers)")
    config.kafka, config.bootstrap_servers = props, props.get("bootstrap.servers")
    check_routing(config)
    topics = routed_topics(config)
    if not topics and not config.pattern:
        raise ConfigError("give --topic or --pattern (the topics whose tables to show)")
    return LoadOptions(kafka=props, topics=topics, pattern=config.pattern, sink_id=config.sink_id,
                       dead_letter=None, routing=build_routing(config, lambda transform: transform))


def routed_offsets(args: argparse.Namespace) -> int:
    options = routed_options(args)
    lags = tables_lag(options, submitted_session() or hadoop_settings(args.hadoop, os.environ))
    return print_tables(options, lags, args.json)



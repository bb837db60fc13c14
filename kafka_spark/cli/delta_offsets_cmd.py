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
import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from kafka_spark.app.flags import add_sink_id_option, add_topic_options, topics_of
from kafka_spark.cli.metadata_cmd import add_client_args, client_props, has_cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.location import TableLocation, locate, submitted_session
from kafka_spark.delta.position import committed_positions
from kafka_spark.delta.sink import tables_lag
from kafka_spark.delta.storage import environment_hadoop_conf
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.options import LoadOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.routing import Routing
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


def _spark_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    return json.loads(offsets_to_json(offsets))


def _when(ms: int) -> str:
    if ms <= 0:
        return "unknown time"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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
        return _print_lags(args.table, lags, args.json)
    positions = committed_positions(location)
    if args.sink_id is not None:
        if args.sink_id not in positions:
            known = ", ".join(sorted(positions)) or "none"
            raise ConfigError(f"sink {args.sink_id!r} has not committed to {args.table} (sinks: {known})")
        positions = {args.sink_id: positions[args.sink_id]}
    return _print_positions(args.table, positions, args.json)


def _print_positions(table: str, positions: dict[str, SinkCommit], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: {"batch": c.batch, "committed_at_ms": c.committed_at_ms,
                                "offsets": _spark_json(c.offsets),
                                **({"freshness_ms": c.freshness_ms} if c.freshness_ms else {})}
                          for sid, c in sorted(positions.items())}, indent=2))
        return 0
    if not positions:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, c in sorted(positions.items()):
        print(f"sink {sid}: batch {c.batch}, committed {_when(c.committed_at_ms)}{_fresh(c.freshness_ms)}")
        width = max(len(tp.topic) for tp in c.offsets) if c.offsets else 5
        print(f"  {'topic':<{width}}  {'partition':>9}  {'committed':>12}")
        for tp in sorted(c.offsets):
            print(f"  {tp.topic:<{width}}  {tp.partition:>9}  {c.offsets[tp]:>12}")
    return 0


def _fresh(freshness_ms: dict[str, int] | None) -> str:
    """'; records 0.3s old (p50), 0.9s (p99), 1.2s (max)' as the batch was committed, or '' unrecorded."""
    if not freshness_ms:
        return ""
    parts = [f"{freshness_ms[k] / 1000:.1f}s ({k})" for k in ("p50", "p99", "max") if k in freshness_ms]
    return "; records " + parts[0].replace(" (", " old (", 1) + "".join(f", {p}" for p in parts[1:])


def _lag_json(lag: SinkLag) -> dict[str, Any]:
    out: dict[str, Any] = {
        "batch": lag.batch, "committed_at_ms": lag.committed_at_ms, "offsets": _spark_json(lag.committed),
        "latest": _spark_json(lag.latest), "lag": _spark_json(lag.lag), "total_lag": lag.total,
        **({"freshness_ms": lag.freshness_ms} if lag.freshness_ms else {}),
    }
    if lag.new_partitions:
        out["new_partitions"] = _spark_json(dict.fromkeys(lag.new_partitions, 0))
    if lag.missing_topics:
        out["missing_topics"] = list(lag.missing_topics)
    return out


def _print_lags(table: str, lags: dict[str, SinkLag], as_json: bool) -> int:
    if as_json:
        print(json.dumps({sid: _lag_json(lag) for sid, lag in lags.items()}, indent=2))
        return 0
    if not lags:
        print(f"{table}: no kafka-spark sink has committed to this table")
        return 0
    for sid, lag in lags.items():
        print(f"sink {sid}: batch {lag.batch}, committed {_when(lag.committed_at_ms)}{_fresh(lag.freshness_ms)}")
        tps = sorted(set(lag.committed) | set(lag.lag))
        width = max([len(tp.topic) for tp in tps] + [5])
        print(f"  {'topic':<{width}}  {'partition':>9}  {'committed':>12}  {'latest':>12}  {'lag':>10}")
        new = set(lag.new_partitions)
        for tp in tps:
            committed = "new" if tp in new else str(lag.committed[tp])
            latest = str(lag.latest[tp]) if tp in lag.latest else "-"
            behind = str(lag.lag[tp]) if tp in lag.lag else "-"
            print(f"  {tp.topic:<{width}}  {tp.partition:>9}  {committed:>12}  {latest:>12}  {behind:>10}")
        print(f"  total lag: {lag.total} records")
        for topic in lag.missing_topics:
            print(f"  topic {topic} no longer exists on the brokers")
        if lag.behind_broker:
            names = ", ".join(str(tp) for tp in lag.behind_broker[:5])
            print(f"  warning: the table is past the broker's latest offset on {names} "
                  "(topic recreated or truncated); the next load will refuse to run")
    return 0


def routed_options(args: argparse.Namespace) -> LoadOptions:
    """The routed options of the flags over the --config file: the routing, topics, sink and client settings."""
    from kafka_spark.app.config import client_properties, read_config_file
    from kafka_spark.app.model import AppConfig
    from kafka_spark.app.routing import build_routing, check_routing, parse_template, routed, routed_topics
    from kafka_spark.app.settings import LOAD_KEYS, STREAM_KEYS

    config = AppConfig()
    if args.config:
        read_config_file(args.config, config, {**STREAM_KEYS, **LOAD_KEYS})
    if config.table_format != "delta":  # its tables are names in an Iceberg catalog: the Delta log has none
        raise ConfigError(f"{args.config}: table-format {config.table_format}: delta-offsets reads Delta tables; an "
                          "Iceberg table's positions: kafka_spark.iceberg.committed_position / tables_lag")
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
    return _print_tables(options, lags, args.json)


def _topic(lag: SinkLag | None, table: str, known: Mapping[str, str], routing: Routing | None = None
           ) -> str | None:
    from kafka_spark.app.routed_run import template_topic

    topics = {tp.topic for tp in lag.committed} if lag is not None else set()
    return topics.pop() if len(topics) == 1 else known.get(table) or template_topic(routing, table)


def _print_tables(options: LoadOptions, lags: dict[str, SinkLag | None], as_json: bool) -> int:
    from kafka_spark.app.routed_run import table_topics

    committed = {tp.topic for lag in lags.values() if lag is not None for tp in lag.committed}
    known = table_topics(options.routing, committed | set(options.topics))
    total = sum(lag.total for lag in lags.values() if lag is not None)
    if as_json:
        tables = [{"table": table, "topic": _topic(lag, table, known, options.routing),
                   **(_lag_json(lag) if lag is not None else {"committed": False})}
                  for table, lag in sorted(lags.items())]
        print(json.dumps({"sink": options.sink_id, "tables": tables, "total_lag": total}, indent=2))
        return 0
    if not lags:
        print(f"sink {options.sink_id}: no topic selected, so no table")
        return 0
    width = max(len(t) for t in lags)
    topic_width = max([len(_topic(lag, t, known, options.routing) or "-") for t, lag in lags.items()] + [5])
    print(f"sink {options.sink_id}: {len(lags)} tables")
    print(f"  {'table':<{width}}  {'topic':<{topic_width}}  {'batch':>6}  {'committed at':<23}  {'partitions':>10}  "
          f"{'lag':>10}")
    for table, lag in sorted(lags.items()):
        topic = _topic(lag, table, known, options.routing) or "-"
        if lag is None:
            print(f"  {table:<{width}}  {topic:<{topic_width}}  {'-':>6}  {'no commit yet':<23}  {'-':>10}  {'-':>10}")
            continue
        print(f"  {table:<{width}}  {topic:<{topic_width}}  {lag.batch:>6}  {_when(lag.committed_at_ms):<23}  "
              f"{len(lag.committed):>10}  {lag.total:>10}")
    print(f"  total lag: {total} records")
    for table, lag in sorted(lags.items()):
        if lag is not None and lag.behind_broker:
            names = ", ".join(str(tp) for tp in lag.behind_broker[:5])
            print(f"  warning: {table} is past the broker's latest offset on {names} (topic recreated or "
                  "truncated); the next load will refuse to run")
    return 0

"""The load's and the stream's flags: the shared vocabulary (flags.py) and their own, each also a key of the
--config file (config.py, settings.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kafka_spark.app.flags import (
    add_connection_options,
    add_data_loss_option,
    add_format_options,
    add_group_option,
    add_hidden,
    add_sink_id_option,
    add_topic_options,
)
from kafka_spark.app.model import SAMPLE_RECORDS


def add_common_arguments(p: argparse.ArgumentParser, conf_file: str, json_help: str) -> None:
    """The flags both applications take."""
    p.add_argument("--config", metavar="FILE", help=f"a TOML file with these settings (example: conf/{conf_file})")
    add_connection_options(p, json_help)
    add_topic_options(p, what="a topic to load")
    p.add_argument("--table", metavar="PATH|NAME",
                   help="the Delta table, created by the first run: a directory, a store URI (s3a://bucket/t, "
                        "abfss://..., gs://..., hdfs://...), or a catalog name (db.table or catalog.db.table); "
                        "with --table-format iceberg, namespace.table in the Iceberg catalog")
    p.add_argument("--table-template", metavar="TEMPLATE",
                   help="instead of --table, a table per topic: a path, store URI or catalog name with {topic} "
                        "(/lake/bronze/{topic}, bronze.{topic}); per-topic settings go in --config's "
                        "[topics.NAME] sections, explicit tables in its [tables] map")
    p.add_argument("--on-table-error", metavar="fail-fast|continue",
                   help="with a table per topic: fail-fast (default) stops at the first table whose commit fails; "
                        "continue commits the others, reports the failed ones (exit 1) and retries them next time")
    p.add_argument("--table-format", metavar="delta|iceberg",
                   help="the tables' format: delta (default) or iceberg (tables named namespace.table in an Iceberg "
                        "catalog, written through pyiceberg; the `iceberg` extra)")
    add_iceberg_catalog_options(p)
    add_sink_id_option(p, "names this pipeline's offsets in the table (default: default)")
    p.add_argument("--offset", metavar="WHERE",
                   help="where a table new to this sink starts: earliest (default), latest, or @TIME (epoch "
                        "milliseconds or ISO-8601)")
    add_hidden(p, "--starting-offsets", dest="starting_offsets")
    p.add_argument("--partition-by", metavar="C1,C2",
                   help="partition the table by these output columns (Iceberg: also its transforms, such as "
                        "'day(timestamp),bucket(16, key)')")
    p.add_argument("--sort-by", metavar="C1,C2",
                   help="an Iceberg table's sort order, each data file's rows sorted by it: columns (or their "
                        "transforms), each optionally 'desc', such as 'key,timestamp desc'")
    p.add_argument("--transform", metavar="SQL|MODULE:FUNC",
                   help="a SQL SELECT over the view `kafka`, or module:function taking and returning a DataFrame")
    add_data_loss_option(p)
    p.add_argument("--include-headers", metavar="true|false", help="keep the records' headers column")
    add_group_option(p, "after each commit, also commit the offsets to this consumer group (for lag tools)",
                     "--publish-group")
    p.add_argument("--start-zookeeper-group", metavar="GROUP",
                   help="a table new to this sink starts where this old consumer group's offsets in ZooKeeper "
                        "stand (/consumers/GROUP/offsets; --offset for partitions it has none of)")
    p.add_argument("--publish-zookeeper-group", metavar="GROUP",
                   help="after each commit, also write the offsets to ZooKeeper as old consumers did "
                        "(/consumers/GROUP/offsets/TOPIC/PARTITION)")
    p.add_argument("--value-schema", metavar="DDL",
                   help="parse each value as JSON with this Spark DDL schema into the column `data`; a value that "
                        "does not parse fails the run, naming its offset (see --dead-letter)")
    add_format_options(p, "a record that does not decode fails the run, naming its offset (see --dead-letter)")
    p.add_argument("--schema-evolution-mode", metavar="none|restart|addNewColumns",
                   help="with a format: none (default) decodes every record with the subject's schema as the run "
                        "starts; restart stops the run at the first record written with a newer version of the "
                        "subject (nothing of that batch is committed), so the next run decodes with it; "
                        "addNewColumns decodes each batch with the subject's latest version and adds its new "
                        "fields to the table in the batch's commit, without a restart")
    p.add_argument("--writer", metavar="auto|spark|direct|pyiceberg",
                   help="who writes the rows: auto (default: each task writes its rows as Parquet and the commit "
                        "goes through delta-rs, or pyiceberg for Iceberg, where the table allows it; else Spark's "
                        "writer, or pyiceberg's for Iceberg, saying why), spark (Spark's Delta writer, or Iceberg's "
                        "Spark runtime), direct (refused, with the reason, for a table it cannot serve) or "
                        "pyiceberg (Iceberg tables)")
    p.add_argument("--merge-schema", metavar="true|false",
                   help="let a write add the columns that a newer schema or the transform brings to the table "
                        "(Delta's mergeSchema; default false)")
    p.add_argument("--cdc", metavar="debezium|upsert",
                   help="the topics are change streams, applied to the table as upserts and deletes (Delta's MERGE, "
                        "with the offsets in the same commit): debezium (Debezium's JSON change events) or upsert "
                        "(a keyed topic: the value is the row, a null value deletes its key)")
    p.add_argument("--key-columns", metavar="C1,C2",
                   help="with --cdc: the columns that identify a row (default: the record key's fields)")
    p.add_argument("--cdc-metadata", metavar="true|false",
                   help="with --cdc: add the columns __op, __source_ts_ms and __lsn of each row's last change")
    p.add_argument("--cdc-soft-delete", metavar="true|false",
                   help="with --cdc: keep deleted rows, marked __deleted = true, instead of removing them (a truncate "
                        "marks every row)")
    p.add_argument("--cdc-history", metavar="PATH",
                   help="with --cdc: also append every change to this Delta table (a history of the rows, in Kafka "
                        "order, exactly once); {topic} in it is each routed table's topic")
    p.add_argument("--dead-letter", metavar="PATH",
                   help="with --value-schema, a format or --cdc: write records whose value does not parse, decode or "
                        "apply (a change event) to "
                        "this table (Delta: a path; Iceberg: namespace.table), with their offsets and the error, and "
                        "load the rest")
    p.add_argument("--seed-records", metavar="N",
                   help=f"sample records to seed an empty local topic with (default {SAMPLE_RECORDS}; no broker only)")



def add_iceberg_catalog_options(p: argparse.ArgumentParser) -> None:
    """The flags that name an Iceberg catalog (--table-format iceberg, iceberg-offsets)."""
    p.add_argument("--iceberg-catalog", metavar="NAME",
                   help="the Iceberg catalog's name (default kafka_spark); a catalog of pyiceberg's configuration "
                        "(.pyiceberg.yaml, PYICEBERG_CATALOG__NAME__*) is used with its properties")
    p.add_argument("--iceberg-catalog-uri", metavar="URI",
                   help="the Iceberg catalog's uri (pyiceberg's `uri`: http(s):// for REST, thrift:// for Hive, a "
                        "database URL for a SQL catalog)")
    p.add_argument("--iceberg-warehouse", metavar="PATH|URI",
                   help="the Iceberg catalog's warehouse (pyiceberg's `warehouse`); alone, a directory holding the "
                        "embedded SQLite catalog and its tables")
    p.add_argument("--iceberg-property", dest="iceberg_properties", action="append", default=[],
                   metavar="KEY=VALUE",
                   help="a pyiceberg catalog property (type, credential, s3.endpoint, ...), repeatable; credentials "
                        "belong in --config's [iceberg] table or pyiceberg's configuration rather than here")

def add_load_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p, "kafka-to-delta.toml",
                         "print only the run's summary, as one line of JSON (no progress display)")
    p.add_argument("--max-records", metavar="N", help="load at most N offsets in this run (default: all new ones)")
    p.add_argument("--log-dirs", metavar="DIR[,DIR]",
                   help="back-fill from Kafka log directories (paths, globs or s3a:// URIs) instead of brokers: "
                        "from the table's committed offsets to the end of the files, committed as a load from "
                        "brokers is, so either kind of run continues the other")


def add_stream_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p, "stream-to-delta.toml",
                         "print one line of JSON per committed micro-batch and one for the run, nothing else")
    p.add_argument("--trigger", metavar="WHEN",
                   help="a micro-batch interval such as 10s (default), 500ms or 1m; or available-now (load what "
                        "is there, in micro-batches, then stop) or once (all of it in one micro-batch, then stop)")
    p.add_argument("--checkpoint", metavar="PATH",
                   help="the query's checkpoint (default: <table>/_kafka_spark/checkpoints/<sink id>)")
    p.add_argument("--max-offsets-per-trigger", metavar="N",
                   help="at most N offsets per micro-batch, divided over partitions like Spark's Kafka source")
    p.add_argument("--min-offsets-per-trigger", metavar="N",
                   help="wait for at least N new offsets before a micro-batch (up to --max-trigger-delay)")
    p.add_argument("--max-trigger-delay", metavar="DURATION",
                   help="the longest a micro-batch waits for --min-offsets-per-trigger (default 15m)")
    p.add_argument("--sample-rate", metavar="N",
                   help="sample page views produced a second while the demo runs (default 50; no broker only)")
    p.add_argument("--metrics-port", metavar="PORT",
                   help="serve each table's rows, commits, commit seconds, lag, freshness, dead letters and failures "
                        "in Prometheus' text format on this port while the stream runs (the `metrics` extra)")
    p.add_argument("--metrics-address", metavar="ADDRESS",
                   help="the address the metrics endpoint binds (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--compact-every", metavar="N",
                   help="compact each table after every N of its commits, between micro-batches: its small files "
                        "rewritten into large ones in a commit that changes no data and no offsets")
    p.add_argument("--compact-target-size", metavar="SIZE",
                   help="with --compact-every: the compacted files' size, in bytes or as 128m, 1g (default: the "
                        "table's delta.targetFileSize, else 100m)")
    p.add_argument("--vacuum-retention-hours", metavar="HOURS",
                   help="with --compact-every: after each compaction, delete the files removed from the table more "
                        "than HOURS ago (at least the table's delta.deletedFileRetentionDuration, 168 by default)")


def app_parser(prog: str, description: str, epilog: str,
               add: Callable[[argparse.ArgumentParser], None]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    add(p)
    return p

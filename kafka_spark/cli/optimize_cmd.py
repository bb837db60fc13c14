"""`kafka-spark optimize` and `kafka-spark vacuum`: a Delta table's small files compacted, and the files it no longer
uses deleted, for one table, the tables of a table per topic, or every table under a directory; with
`--table-format iceberg` (or a --config file of Iceberg tables), `optimize` compacts Iceberg tables
(iceberg_optimize_cmd.py) and `vacuum` is refused, Iceberg's own maintenance deleting their unused files.

Both run without Spark or a JVM (pyarrow rewrites the files, delta-rs commits and vacuums) on the table's files
as the sink reaches them: local paths, and store URIs with the Hadoop settings a user gives Spark (`--conf`, and
the AWS SDK's environment variables). Run under spark-submit, they use the driver's SparkSession instead (its
Hadoop settings, its catalog for a table by name). Compaction commits change no data and no sink's offsets, so they
can run while a stream or a load writes the table (see kafka_spark/delta/compaction.py and
docs/delta/maintenance.md).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from kafka_spark.app.arguments import add_iceberg_catalog_options
from kafka_spark.app.flags import add_topic_options
from kafka_spark.app.table_formats import ICEBERG
from kafka_spark.cli import iceberg_optimize_cmd
from kafka_spark.cli.delta_offsets_cmd import hadoop_settings, routed_options
from kafka_spark.cli.metadata_cmd import add_client_args
from kafka_spark.delta.errors import NoTableError
from kafka_spark.errors import ConfigError, KafkaSparkError

EXIT_FAILED = 1  # a table failed (the others were done); settings errors exit 2 from main()


def _add_selection(p: argparse.ArgumentParser, verb: str) -> None:
    """Which tables: one (or several) by --table, a table per topic, or every table under a directory."""
    p.add_argument("--table", action="append", metavar="PATH|NAME",
                   help=f"the Delta table to {verb}: a directory, a store URI (s3a://, abfss://, gs://), or under "
                        "spark-submit a catalog name; with --table-format iceberg, namespace.table in the Iceberg "
                        "catalog (repeatable)")
    p.add_argument("--table-template", metavar="TEMPLATE",
                   help="instead, every table of a load or stream with a table per topic ({topic} in a path), over "
                        "the topics of --topic or --pattern on the brokers of -b")
    add_topic_options(p, what="with --table-template, a topic")
    p.add_argument("--config", metavar="FILE",
                   help="instead, the tables of a load's or stream's TOML file: its table-template or [tables], "
                        "topics or pattern, and [kafka] (flags win); for Iceberg tables also its table-format, "
                        "catalog ([iceberg], iceberg-*) and table")
    p.add_argument("--root", metavar="DIR",
                   help="instead, every Delta table directly under DIR (DIR/NAME/_delta_log)")
    p.add_argument("--conf", dest="hadoop", action="append", default=[], metavar="KEY=VALUE",
                   help="a Hadoop setting of the tables' store, as given to Spark (spark.hadoop.fs.s3a.endpoint=... "
                        "or fs.s3a.endpoint=...), repeatable; AWS_* environment variables are read too")
    p.add_argument("--table-format", metavar="delta|iceberg",
                   help="the tables' format, delta or iceberg (default: --config's table-format, else "
                        "KAFKA_SPARK_TABLE_FORMAT, else delta)")
    add_iceberg_catalog_options(p)
    add_client_args(p)
    p.set_defaults(sink_id=None)  # the routing's tables do not depend on the sink


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="compact a Delta or Iceberg table's small files (a commit that changes no "
                                        "data and no offsets)")
    _add_selection(p, "compact")
    p.add_argument("--target-size", metavar="SIZE",
                   help="the compacted files' size, in bytes or as 128m, 1g (default: the table's "
                        "delta.targetFileSize, or an Iceberg table's write.target-file-size-bytes, else 100m)")
    p.add_argument("--dry-run", action="store_true",
                   help="write and commit nothing: show the files a compaction would rewrite and write")
    p.set_defaults(run=run_optimize)

    v = sub.add_parser("vacuum", help="delete the files a Delta table no longer uses (compacted away, removed)")
    _add_selection(v, "vacuum")
    v.add_argument("--retention-hours", metavar="HOURS",
                   help="delete files removed more than HOURS ago (default: the table's "
                        "delta.deletedFileRetentionDuration, else 168)")
    v.add_argument("--full", action="store_true",
                   help="also delete files older than the retention that no commit names (left by a write or a "
                        "compaction killed before its commit); every file under the table's directory is listed")
    v.add_argument("--no-retention-check", action="store_true",
                   help="allow --retention-hours below the table's delta.deletedFileRetentionDuration: readers of "
                        "older versions (and, with --full, writes not yet committed) lose their files")
    v.add_argument("--dry-run", action="store_true", help="delete nothing: list the files that would go")
    v.set_defaults(run=run_vacuum)


def _conf(args: argparse.Namespace) -> Any:
    from kafka_spark.delta.location import submitted_session

    return submitted_session() or hadoop_settings(args.hadoop, os.environ)


def selected_tables(args: argparse.Namespace) -> tuple[list[str], bool]:
    """The tables the flags select, and whether they are a set (whose tables not created yet are passed over)."""
    routed = bool(args.table_template or args.config)
    given = [name for name, on in (("--table", args.table), ("--table-template or --config", routed),
                                   ("--root", args.root)) if on]
    if len(given) != 1:
        raise ConfigError("give the tables: --table, --table-template (or --config) or --root"
                          if not given else f"give only one of {' and '.join(given)}")
    if (args.topic or args.pattern) and not routed:
        raise ConfigError("--topic and --pattern only with --table-template or --config")
    if args.table:
        return list(dict.fromkeys(args.table)), False
    if args.root:
        from kafka_spark.delta.compaction import tables_under

        return tables_under(args.root, hadoop_settings(args.hadoop, os.environ)), True
    from kafka_spark.sink.routed import routed_table_names

    return routed_table_names(routed_options(args)), True


def _each(args: argparse.Namespace, command: str, act: Callable[[str, Any], Any],
          line: Callable[[Any], str]) -> int:
    """Run `act(table, conf)` on every selected Delta table; a line (or a JSON object) per table; exit 1 if one
    failed."""
    iceberg_optimize_cmd.refuse_catalog_flags(args)
    tables, is_set = selected_tables(args)
    conf = _conf(args)
    return report(args, command, tables, is_set, lambda table: act(table, conf), line)


def report(args: argparse.Namespace, command: str, tables: list[str], is_set: bool, act: Callable[[str], Any],
           line: Callable[[Any], str], kind: str = "Delta") -> int:
    """Run `act(table)` on every table; a line (or a JSON object) per table; exit 1 if one of a set failed (a
    single table's error is raised, for main() to print)."""
    results: list[dict[str, Any]] = []
    failed = 0
    for table in tables:
        try:
            done = act(table)
        except (NoTableError, iceberg_optimize_cmd.NoIcebergTableError):
            if not is_set:
                raise
            results.append({"table": table, "status": "no table"})
            text = f"{table}: no {kind} table yet"
        except KafkaSparkError as exc:
            if not is_set:
                raise
            failed += 1
            results.append({"table": table, "status": "failed", "error": str(exc)})
            text = f"{table}: failed: {exc}"
        else:
            results.append({"status": "done", **done.summary()})
            text = line(done)
        if not args.json:
            print(text, flush=True)
    if args.json:
        print(json.dumps({"command": command, "tables": results, "failed": failed}, indent=2))
    elif is_set:
        print(f"{len(tables)} tables, {failed} failed" if tables else f"no {kind} table selected")
    return EXIT_FAILED if failed else 0


def run_optimize(args: argparse.Namespace) -> int:
    from kafka_spark.app.settings import parse_size
    from kafka_spark.delta.compaction import compact_table

    size = parse_size(args.target_size, "--target-size") if args.target_size is not None else None
    if iceberg_optimize_cmd.chosen_format(args) == ICEBERG:
        tables, is_set, act, line = iceberg_optimize_cmd.optimize_tables(args, size)
        return report(args, "optimize", tables, is_set, act, line, kind="Iceberg")
    return _each(args, "optimize", lambda table, conf: compact_table(table, conf, size, args.dry_run),
                 lambda done: f"{done.table}: {done.text()} in {done.seconds:.1f}s")


def run_vacuum(args: argparse.Namespace) -> int:
    from kafka_spark.app.values import parse_count
    from kafka_spark.delta.compaction import vacuum_table

    if iceberg_optimize_cmd.chosen_format(args) == ICEBERG:
        raise ConfigError(iceberg_optimize_cmd.VACUUM_REFUSED)
    hours = parse_count(args.retention_hours, "--retention-hours") if args.retention_hours is not None else None

    def vacuum(table: str, conf: Any) -> Any:
        return vacuum_table(table, conf, hours, args.dry_run, not args.no_retention_check, args.full)

    def line(done: Any) -> str:
        kept = f"removed more than {done.retention_hours} hours ago" if done.retention_hours is not None else (
            "past the table's retention")
        verb = "would delete" if done.dry_run else "deleted"
        return f"{done.table}: {verb} {len(done.files):,} files {kept} in {done.seconds:.1f}s"

    return _each(args, "vacuum", vacuum, line)

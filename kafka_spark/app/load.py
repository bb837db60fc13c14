"""The batch load application: everything new since the table's committed offsets, in one commit of the table's
format (a Delta commit, or an Iceberg snapshot)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence

from kafka_spark.app.arguments import add_load_arguments, app_parser
from kafka_spark.app.config import client_properties, merge_settings, validate
from kafka_spark.app.demo import SAMPLE_TOPIC, STOP_HINT
from kafka_spark.app.exits import run_program
from kafka_spark.app.model import SAMPLE_TABLE, table_location
from kafka_spark.app.output import Notes, print_embedded, print_offsets
from kafka_spark.app.payloads import decoded
from kafka_spark.app.routed_run import exit_status, print_load, result_json, table_lines
from kafka_spark.app.routing import routed
from kafka_spark.app.settings import LOAD_KEYS, LoadConfig
from kafka_spark.app.source import Source, resolve_source, sink_settings
from kafka_spark.app.stops import StopRequest
from kafka_spark.app.table_formats import RunFormat, run_format
from kafka_spark.local.session import LazySpark
from kafka_spark.sink import LoadOptions, LoadResult, OffsetsMovedBackwardsError, TableCommitError
from kafka_spark.sink.read_plan import resolve_transform

PROG = "kafka-to-delta"
FILE_KEYS = LOAD_KEYS
DESCRIPTION = ("Load Kafka topics into a Delta table (or, with --table-format iceberg, an Iceberg table); the Kafka "
               "offsets are committed in the same transaction as the rows, so every run resumes exactly where the "
               "last commit ended.")
EPILOG = ("With no broker (no --bootstrap-server, none in --config) it starts or reuses the local broker, seeds "
          f"topic {SAMPLE_TOPIC!r} with sample page views if it is empty, and loads it into ./{SAMPLE_TABLE}. "
          f"Ctrl-C or SIGTERM stops a run at once (exit 130 or 143): what it had not committed, the next run "
          f"loads. Stop that broker with: {STOP_HINT}")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    return app_parser(prog, DESCRIPTION, EPILOG, add_load_arguments)


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> LoadConfig:
    return merge_settings(args, LoadConfig(), LOAD_KEYS, environ)


def read_config(argv: Sequence[str] | None, prog: str = PROG) -> tuple[LoadConfig, argparse.Namespace]:
    args = build_parser(prog).parse_args(argv)
    return config_from_args(args), args


def print_summary(prog: str, config: LoadConfig, source: Source, table: str, result: LoadResult,
                  fmt: RunFormat | None = None) -> None:
    fmt = fmt or run_format(config)
    if result.status == "up-to-date":
        print(f"{prog}: {table} is up to date (sink {result.sink_id!r}, batch {result.batch}); "
              f"no new records, nothing written ({result.seconds:.1f}s)")
    else:
        print(f"{prog}: committed batch {result.batch} of sink {result.sink_id!r} to {table} "
              f"({fmt.version_label} {result.table_version})")
        print(f"  rows       {result.rows:,} in {result.seconds:.1f}s ({result.records_per_second:,.0f} records/s)")
        if result.dead_letters:
            bad = "that do not decode" if decoded(config) else "whose value does not parse"
            print(f"  dead       {result.dead_letters:,} records {bad}, to {config.dead_letter}")
    print_offsets(prog, "next offset to load, per topic partition" + (" (from -> to)" if result.rows else ""),
                  result.start, result.offsets)
    if result.lost:
        lost = ", ".join(f"{tp}: {n:,}" for tp, n in sorted(result.lost.items()))
        print(f"  warning    offsets deleted by retention before they were loaded, skipped: {lost}")
    if config.publish_group and result.status == "committed":
        print(f"  group      offsets also committed to consumer group {config.publish_group!r}")
    if config.publish_zookeeper_group and result.status == "committed":
        print(f"  zookeeper  offsets also written to /consumers/{config.publish_zookeeper_group}/offsets")
    if source.embedded:
        print_embedded(source, table, fmt.offsets_command(table, source.bootstrap))


def run_load(config: LoadConfig, as_json: bool, prog: str = PROG) -> int:
    """Load once and print the summary; 0 when committed or up to date."""
    with StopRequest(prog, graceful=False):
        return _run_load(config, as_json, prog)


def _run_load(config: LoadConfig, as_json: bool, prog: str) -> int:
    note = Notes(prog, quiet=as_json)
    validate(config)
    fmt = run_format(config)
    started = time.monotonic()
    spark = LazySpark(prog)
    if routed(config):
        return _run_routed_load(config, as_json, prog, spark, started, note, fmt)
    table = table_location(config.table or fmt.sample_table)
    if config.log_dirs:
        source = Source(client_properties(config), list(config.topics), resolve_transform(config.transform), "",
                        embedded=False)
    else:
        source = resolve_source(config, table, note, spark.prestart,
                                lambda: fmt.position(table, config.sink_id, spark) is not None)
    options = LoadOptions(**sink_settings(config, source, table), max_records=config.max_records,
                          progress=not as_json, log_dirs=config.log_dirs or None)
    try:
        result = fmt.load(spark, options)
    except OffsetsMovedBackwardsError as exc:
        if source.embedded:
            raise OffsetsMovedBackwardsError(f"{exc} (demo: {fmt.start_over(table)})") from None
        raise
    if as_json:
        print(json.dumps({**result.summary(), "table": table, **fmt.summary(), "bootstrap": source.bootstrap,
                          "embedded": source.embedded, "seeded": source.seeded,
                          "elapsed_seconds": round(time.monotonic() - started, 3)}))
    else:
        print_summary(prog, config, source, table, result, fmt)
    return 0



def _run_routed_load(config: LoadConfig, as_json: bool, prog: str, spark: LazySpark, started: float,
                     note: Notes, fmt: RunFormat) -> int:
    """Every topic into its table, one commit per table; one line per table, and exit 1 when one failed."""
    source = resolve_source(config, "", note, spark.prestart, lambda: False)
    options = LoadOptions(**sink_settings(config, source, None), max_records=config.max_records,
                          progress=not as_json)
    error: TableCommitError | None = None
    try:
        result = fmt.load_tables(spark, options)
    except TableCommitError as exc:  # fail-fast: what the tables before it did, then the error naming it
        result, error = exc.result, exc
    lines = table_lines(result)
    if as_json:
        print(json.dumps({**result_json(result, lines), "sink": config.sink_id, **fmt.summary(),
                          "bootstrap": source.bootstrap,
                          **({"error": str(error)} if error else {}),
                          "elapsed_seconds": round(time.monotonic() - started, 3)}))
    else:
        print_load(prog, config.sink_id, result, lines)
    if error is not None:
        raise error
    return exit_status(prog, lines)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The load as a program: flags (and --config, and the environment) in, an exit status out."""
    return run_program(prog, argv, lambda a: read_config(a, prog), run_load)

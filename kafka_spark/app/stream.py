"""The stream application: a Structured Streaming query committing every micro-batch's rows and offsets in
one commit of the table's format (a Delta commit, or an Iceberg snapshot), until it is stopped or, with
available-now/once, until it has caught up."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka_spark.app.arguments import add_stream_arguments, app_parser
from kafka_spark.app.config import merge_settings, validate
from kafka_spark.app.demo import SAMPLE_TOPIC, STOP_HINT, SampleFeed
from kafka_spark.app.exits import run_program
from kafka_spark.app.model import SAMPLE_TABLE, table_location
from kafka_spark.app.output import Notes, print_embedded, print_offsets, table_rows
from kafka_spark.app.routed_run import RunTables, counts, exit_status, trigger_json
from kafka_spark.app.routing import routed
from kafka_spark.app.settings import STREAM_KEYS, StreamConfig, check_stream
from kafka_spark.app.source import Source, resolve_source, sink_settings
from kafka_spark.app.stops import StopRequest
from kafka_spark.app.table_formats import run_format
from kafka_spark.app.watch import Watch, follow_query
from kafka_spark.local.session import LazySpark
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink import MultiLoadResult, StreamOptions

if TYPE_CHECKING:
    from kafka_spark.app.metrics import MetricsServer, StreamMetrics

PROG = "stream-to-delta"
FILE_KEYS = STREAM_KEYS
DESCRIPTION = ("Stream Kafka topics into a Delta table (or, with --table-format iceberg, an Iceberg table); each "
               "micro-batch's Kafka offsets are committed in the same transaction as its rows, so a restart (even "
               "without the checkpoint) resumes exactly where the table ends.")
EPILOG = ("With no broker (no --bootstrap-server, none in --config) it starts or reuses the local broker, seeds "
          f"topic {SAMPLE_TOPIC!r} with sample page views if it is empty, keeps producing --sample-rate views a "
          f"second while it runs, and streams them into ./{SAMPLE_TABLE}. Ctrl-C or SIGTERM stops it after the "
          f"micro-batch in flight (exit 0), a second Ctrl-C at once (exit 130). Stop that broker with: {STOP_HINT}")


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    return app_parser(prog, DESCRIPTION, EPILOG, add_stream_arguments)


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> StreamConfig:
    return check_stream(merge_settings(args, StreamConfig(), STREAM_KEYS, environ))


def read_config(argv: Sequence[str] | None, prog: str = PROG) -> tuple[StreamConfig, argparse.Namespace]:
    args = build_parser(prog).parse_args(argv)
    return config_from_args(args), args


def run_stream(config: StreamConfig, as_json: bool, prog: str = PROG) -> int:
    """Run the query until it ends or is stopped, then print the run's summary; 0 unless it failed."""
    with StopRequest(prog) as stop:
        return _run_stream(config, as_json, prog, stop)


def _run_stream(config: StreamConfig, as_json: bool, prog: str, stop: StopRequest) -> int:
    note = Notes(prog, quiet=as_json)
    validate(config)
    started = time.monotonic()
    spark = LazySpark(prog)
    table = "" if routed(config) else table_location(config.table or run_format(config).sample_table)
    metrics, server = _serve_metrics(config, table, note)
    try:
        if routed(config):
            return _run_routed_stream(config, as_json, prog, stop, spark, started, note, metrics)
        return _run_table_stream(config, as_json, prog, stop, spark, started, note, metrics, table)
    finally:
        if server is not None:
            server.close()


def compacting(config: StreamConfig) -> dict[str, Any]:
    """The stream's compaction settings as `StreamOptions` takes them."""
    return {"compact_every": config.compact_every, "compact_target_size": config.compact_target_size,
            "vacuum_retention_hours": config.vacuum_retention_hours}


def _serve_metrics(config: StreamConfig, table: str, note: Notes) -> tuple[StreamMetrics | None,
                                                                           MetricsServer | None]:
    """The run's metrics and their endpoint, when --metrics-port asks for them."""
    if config.metrics_port is None:
        return None, None
    from kafka_spark.app.metrics import DEFAULT_ADDRESS, StreamMetrics

    metrics = StreamMetrics(config.sink_id, table)
    address = config.metrics_address or DEFAULT_ADDRESS
    server = metrics.serve(config.metrics_port, address)
    note(f"metrics at http://{address}:{server.port}/metrics")
    return metrics, server


def _run_table_stream(config: StreamConfig, as_json: bool, prog: str, stop: StopRequest, spark: LazySpark,
                      started: float, note: Notes, metrics: StreamMetrics | None, table: str) -> int:
    fmt = run_format(config)
    before = fmt.position(table, config.sink_id, spark)
    source = resolve_source(config, table, note, spark.prestart, lambda: before is not None)
    watch = Watch(note, as_json, metrics=metrics, version_label=fmt.version_label)
    options = StreamOptions(
        **sink_settings(config, source, table), checkpoint=config.checkpoint, trigger=config.trigger,
        max_offsets_per_trigger=config.max_offsets_per_trigger,
        min_offsets_per_trigger=config.min_offsets_per_trigger, max_trigger_delay=config.max_trigger_delay,
        on_commit=watch.on_commit, **compacting(config),
    )
    feed = None
    if source.embedded and config.sample_rate and source.topics == [SAMPLE_TOPIC]:
        feed = SampleFeed(source.bootstrap, config.sample_rate)
        feed.start()
    try:
        query = fmt.start_stream(spark.session(), options)
        note(f"streaming {', '.join(source.topics) or config.pattern!r} into {table} "
             f"(sink {config.sink_id!r}, trigger {config.trigger}, checkpoint {options.checkpoint_location})"
             + ("; Ctrl-C stops" if not as_json else ""))
        ended = follow_query(query, watch, stop.event, note)
    finally:
        if feed is not None:
            feed.stop()
    after = fmt.position(table, config.sink_id, spark)
    end = after.offsets if after else {}
    if as_json:
        print(json.dumps({"status": ended, "sink": config.sink_id, "micro_batches": len(watch.committed),
                          "rows": watch.rows, "batch": after.batch if after else None,
                          "offsets": json.loads(offsets_to_json(end)), "table": table, **fmt.summary(),
                          "checkpoint": options.checkpoint_location, "bootstrap": source.bootstrap,
                          "embedded": source.embedded, "seeded": source.seeded,
                          "produced": feed.produced if feed else 0,
                          "elapsed_seconds": round(time.monotonic() - started, 3)}), flush=True)
    else:
        print_summary(prog, config, source, table, ended, watch, before.offsets if before else {}, end)
    return 0


def _run_routed_stream(config: StreamConfig, as_json: bool, prog: str, stop: StopRequest, spark: LazySpark,
                       started: float, note: Notes, metrics: StreamMetrics | None) -> int:
    """One query over every topic, each micro-batch committed table by table; a line per table as each
    micro-batch commits and at the end (with each table's lag), and exit 1 when a table's last commit failed."""
    fmt = run_format(config)
    source = resolve_source(config, "", note, spark.prestart, lambda: False)
    tables = RunTables()

    def show(batch_id: int, result: MultiLoadResult) -> None:
        lines = tables.add(result)
        if as_json:
            print(trigger_json(batch_id, result, lines), flush=True)
            return
        note(f"micro-batch {batch_id}: {counts(lines)}, {result.rows:,} rows in {result.seconds:.1f}s "
             f"(driver {result.driver_seconds:.2f}s)")
        for line in table_rows(lines):
            note(line)
        for done in result.committed:
            if done.compaction is not None:
                note(f"  {done.table}: {done.compaction.text(fmt.version_label)}")

    watch = Watch(note, as_json, show_tables=show, metrics=metrics, version_label=fmt.version_label)
    options = StreamOptions(
        **sink_settings(config, source, None), checkpoint=config.checkpoint, trigger=config.trigger,
        max_offsets_per_trigger=config.max_offsets_per_trigger,
        min_offsets_per_trigger=config.min_offsets_per_trigger, max_trigger_delay=config.max_trigger_delay,
        on_trigger=watch.on_trigger, **compacting(config),
    )
    query = fmt.start_stream(spark.session(), options)
    note(f"streaming {', '.join(source.topics) or config.pattern!r} into "
         f"{config.table_template or 'the tables of [tables]'} (sink {config.sink_id!r}, trigger {config.trigger}, "
         f"checkpoint {options.checkpoint_location})" + ("; Ctrl-C stops" if not as_json else ""))
    ended = follow_query(query, watch, stop.event, note)
    lags = fmt.tables_lag(options, spark)
    lines = tables.final(lags, {t: tp for t, tp in ((r.table, r.topic) for r in tables.lines.values()) if tp})
    if metrics is not None:
        metrics.set_lag({t.table: t.lag for t in lines if t.lag is not None})
    if as_json:
        print(json.dumps({"status": ended, "sink": config.sink_id, "micro_batches": len(watch.committed),
                          "rows": watch.rows, "failed": [t.table for t in lines if t.status == "failed"],
                          "tables": [t.summary() for t in lines], "checkpoint": options.checkpoint_location,
                          **fmt.summary(), "bootstrap": source.bootstrap,
                          "elapsed_seconds": round(time.monotonic() - started, 3)}), flush=True)
    else:
        print(f"{prog}: {ended} after {len(watch.committed)} micro-batches, {watch.rows:,} rows, "
              f"{len(lines)} tables of sink {config.sink_id!r}: {counts(lines)}", flush=True)
        for line in table_rows(lines):
            print(line)
        print(f"  total      {watch.rows:,} rows; lag {sum(t.lag or 0 for t in lines):,} records", flush=True)
    return exit_status(prog, lines)


def print_summary(prog: str, config: StreamConfig, source: Source, table: str, ended: str, watch: Watch,
                  start: dict[Any, int], end: dict[Any, int]) -> None:
    print(f"{prog}: {ended} after {len(watch.committed)} committed micro-batches, {watch.rows:,} rows, "
          f"sink {config.sink_id!r} of {table}", flush=True)
    if end:
        print_offsets(prog, "next offset to load, per topic partition (from -> to)", start, end)
    if source.embedded:
        print_embedded(source, table, run_format(config).offsets_command(table, source.bootstrap))


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The stream as a program: flags (and --config, and the environment) in, an exit status out."""
    return run_program(prog, argv, lambda a: read_config(a, prog), run_stream)

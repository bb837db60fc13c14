"""Stream Kafka topics into a Delta table: every micro-batch's rows and Kafka offsets in one Delta commit.

    ./spark-submit.sh jobs/stream_to_delta.py          # demo: local broker, live sample page views, data/page_views
    ./spark-submit.sh jobs/stream_to_delta.py -b host:9092 --topics orders --table /lake/orders --trigger 30s
    ./spark-submit.sh jobs/stream_to_delta.py --config conf/stream-to-delta.toml --trigger available-now

A Structured Streaming query reads `readStream.format("pykafka")` and commits each micro-batch with the
same protocol as kafka_to_delta.py, so the two continue each other on one table and sink. The query runs
until stopped (Ctrl-C or SIGTERM: the micro-batch in flight finishes first), or, with `--trigger
available-now` / `once`, until it has loaded what the topics held when it started. A lost or deleted
checkpoint restarts from the offsets committed in the table. Flags override the --config file.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from job_common import (
    COMMON_KEYS,
    PRODUCER_SETTINGS,
    SAMPLE_TABLE,
    SAMPLE_TOPIC,
    STOP_HINT,
    JobConfig,
    LazySpark,
    Notes,
    PageViews,
    Source,
    add_common_arguments,
    offset_lines,
    parse_config,
    parse_count,
    parse_positive,
    parse_text,
    print_embedded,
    resolve_source,
    run_main,
    sink_settings,
    table_location,
    validate,
)

from kafka_spark.client import Producer
from kafka_spark.delta import LoadResult, StreamOptions, committed_position, start_stream, trigger_kwargs
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.spark.options import duration_ms
from kafka_spark.spark.progress import offsets_behind_latest

PROG = "stream-to-delta"
# How long a stop request waits for the micro-batch in flight before stopping the query anyway.
STOP_GRACE_SECONDS = 120.0


@dataclass
class StreamConfig(JobConfig):
    """A stream's settings: the common ones, the trigger, per-trigger limits and the checkpoint."""

    trigger: str = "10s"
    checkpoint: str | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: str | None = None
    sample_rate: int = 50


def _trigger(value: Any, name: str) -> str:
    text = parse_text(value, name)
    try:
        trigger_kwargs(text)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return text


def _delay(value: Any, name: str) -> str:
    text = parse_text(str(value), name)
    duration_ms(text, name)
    return text


FILE_KEYS = {
    **COMMON_KEYS,
    "trigger": ("trigger", _trigger),
    "checkpoint": ("checkpoint", parse_text),
    "max-offsets-per-trigger": ("max_offsets_per_trigger", parse_positive),
    "min-offsets-per-trigger": ("min_offsets_per_trigger", parse_positive),
    "max-trigger-delay": ("max_trigger_delay", _delay),
    "sample-rate": ("sample_rate", parse_count),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Stream Kafka topics into a Delta table; each micro-batch's Kafka offsets are committed in "
                    "the same Delta transaction as its rows, so a restart (even without the checkpoint) resumes "
                    "exactly where the table ends.",
        epilog="With no broker (no --bootstrap-servers, none in --config) the job starts or reuses the local "
               f"broker, seeds topic {SAMPLE_TOPIC!r} with sample page views if it is empty, keeps producing "
               f"--sample-rate views a second while it runs, and streams them into "
               f"{SAMPLE_TABLE.relative_to(SAMPLE_TABLE.parents[1])}/. Stop the job with Ctrl-C; stop that "
               f"broker with: {STOP_HINT}")
    add_common_arguments(p, "stream-to-delta.toml")
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
    p.add_argument("--json", action="store_true",
                   help="print one line of JSON per committed micro-batch and one for the run, nothing else")
    return p


def read_config(argv: Sequence[str] | None) -> tuple[StreamConfig, argparse.Namespace]:
    config, args = parse_config(build_parser(), argv, StreamConfig(), FILE_KEYS)
    assert isinstance(config, StreamConfig)
    if config.max_trigger_delay is not None and config.min_offsets_per_trigger is None:
        raise ConfigError("--max-trigger-delay only applies with --min-offsets-per-trigger")
    return config, args


# ---- the demo's live traffic ---------------------------------------------------------------------------


class SampleFeed(threading.Thread):
    """Keeps producing sample page views, `rate` a second, until stopped."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        super().__init__(name="sample-feed", daemon=True)
        self.bootstrap = bootstrap
        self.rate = rate
        self.produced = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        views = PageViews(seed=int(time.time()))
        tick, owed = 0.25, 0.0
        with Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_SETTINGS}) as producer:
            due = time.monotonic()
            while not self.stopping.wait(max(0.0, due - time.monotonic())):
                due += tick
                # Fractions carry over, so low rates still average out to `rate` a second.
                owed += self.rate * tick
                count, owed = int(owed), owed - int(owed)
                for key, value, ts in views.now(count):
                    producer.send(SAMPLE_TOPIC, value, key=key, timestamp_ms=ts)
                self.produced += count

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


# ---- running the query ---------------------------------------------------------------------------------


class StopRequest:
    """SIGTERM and the first Ctrl-C ask for a clean stop; a second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._request)
        signal.signal(signal.SIGINT, self._request)

    def _request(self, signum: int, frame: Any) -> None:
        if self.event.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.event.set()


class Watch:
    """Pairs each committed micro-batch with its progress report (for the lag) and prints it once."""

    def __init__(self, note: Notes, as_json: bool) -> None:
        self.note = note
        self.as_json = as_json
        self.committed: dict[int, LoadResult] = {}
        self.shown: set[int] = set()
        self.lock = threading.Lock()
        # Set when a stop is asked for: called once, on a thread of its own, right after the next commit.
        self.stop_after_commit: Callable[[], None] | None = None

    def on_commit(self, batch_id: int, result: LoadResult) -> None:
        with self.lock:
            self.committed[batch_id] = result
            stop, self.stop_after_commit = self.stop_after_commit, None
        if stop is not None:
            # Stopping here, as the micro-batch returns, lands before the next one starts Python tasks:
            # cancelling running Python tasks makes PySpark's daemon print their workers' broken pipes.
            threading.Thread(target=stop, name="stop-after-commit", daemon=True).start()

    def show(self, progress: list[Any], final: bool = False) -> None:
        by_batch = {p.batchId: p for p in progress}
        with self.lock:
            ready = sorted(b for b in self.committed if b not in self.shown and (final or b in by_batch))
            for batch_id in ready:
                self.shown.add(batch_id)
                self._print(batch_id, self.committed[batch_id], by_batch.get(batch_id))

    def _print(self, batch_id: int, result: LoadResult, progress: Any) -> None:
        lag = offsets_behind_latest(progress.sources[0]) if progress is not None and progress.sources else {}
        if self.as_json:
            print(json.dumps({"micro_batch": batch_id, "batch": result.batch, "rows": result.rows,
                              "dead_letters": result.dead_letters,
                              "table_version": result.table_version,
                              "offsets": json.loads(offsets_to_json(result.offsets)),
                              "seconds": round(result.seconds, 3), "behind_latest": lag}), flush=True)
            return
        behind = (f"; behind latest: max {int(lag['maxOffsetsBehindLatest']):,}, "
                  f"avg {float(lag['avgOffsetsBehindLatest']):,.1f} per partition" if lag else "")
        dead = f" (+{result.dead_letters:,} to the dead-letter table)" if result.dead_letters else ""
        self.note(f"micro-batch {batch_id}: committed batch {result.batch} (Delta version {result.table_version}), "
                  f"{result.rows:,} rows{dead} in {result.seconds:.1f}s{behind}")

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.committed.values())


def run_query(query: Any, watch: Watch, stop: StopRequest, note: Notes) -> str:
    """Follow the query until it ends or a stop is asked for; return how it ended."""
    while query.isActive:
        if stop.event.is_set():
            note("stopping: letting the micro-batch in flight finish...")
            # Only the trigger running now: a busy stream starts the next one at once, so waiting for
            # an idle moment could last until the grace period ends.
            deadline = time.monotonic() + STOP_GRACE_SECONDS
            watch.stop_after_commit = query.stop
            last = _last_batch_id(query)
            # The micro-batch in flight stops the query after its commit (Watch.on_commit); a trigger that
            # had no data, or none running, means an idle moment: stop then.
            while query.isActive and time.monotonic() < deadline:
                if not query.status["isTriggerActive"] or _last_batch_id(query) != last:
                    break
                time.sleep(0.02)
            watch.stop_after_commit = None
            query.stop()
            watch.show(query.recentProgress, final=True)
            return "stopped"
        query.awaitTermination(0.5)
        watch.show(query.recentProgress)
    error = query.exception()
    watch.show(query.recentProgress, final=True)
    if error is not None:
        raise error
    return "finished"


def _last_batch_id(query: Any) -> int:
    progress = query.lastProgress
    return progress.batchId if progress is not None else -1


def run(config: StreamConfig, as_json: bool) -> int:
    note = Notes(PROG, quiet=as_json)
    validate(config)
    started = time.monotonic()
    spark = LazySpark(PROG)
    table = table_location(config.table or str(SAMPLE_TABLE))
    before = committed_position(table, config.sink_id, spark)
    source = resolve_source(config, table, note, spark, lambda: before is not None)
    watch = Watch(note, as_json)
    options = StreamOptions(
        **sink_settings(config, source, table), checkpoint=config.checkpoint, trigger=config.trigger,
        max_offsets_per_trigger=config.max_offsets_per_trigger,
        min_offsets_per_trigger=config.min_offsets_per_trigger, max_trigger_delay=config.max_trigger_delay,
        on_commit=watch.on_commit,
    )
    stop = StopRequest()
    stop.install()
    feed = None
    if source.embedded and config.sample_rate and source.topics == [SAMPLE_TOPIC]:
        feed = SampleFeed(source.bootstrap, config.sample_rate)
        feed.start()
    try:
        query = start_stream(spark.session(), options)
        note(f"streaming {', '.join(source.topics) or config.pattern!r} into {table} "
             f"(sink {config.sink_id!r}, trigger {config.trigger}, checkpoint {options.checkpoint_location})"
             + ("; Ctrl-C stops" if not as_json else ""))
        ended = run_query(query, watch, stop, note)
    finally:
        if feed is not None:
            feed.stop()
    after = committed_position(table, config.sink_id, spark)
    end = after.offsets if after else {}
    if as_json:
        print(json.dumps({"status": ended, "sink": config.sink_id, "micro_batches": len(watch.committed),
                          "rows": watch.rows, "batch": after.batch if after else None,
                          "offsets": json.loads(offsets_to_json(end)), "table": table,
                          "checkpoint": options.checkpoint_location, "bootstrap": source.bootstrap,
                          "embedded": source.embedded, "seeded": source.seeded,
                          "produced": feed.produced if feed else 0,
                          "elapsed_seconds": round(time.monotonic() - started, 3)}))
    else:
        print_summary(config, source, table, ended, watch, before.offsets if before else {}, end)
    return 0


def print_summary(config: StreamConfig, source: Source, table: str, ended: str, watch: Watch,
                  start: dict, end: dict) -> None:
    print(f"{PROG}: {ended} after {len(watch.committed)} committed micro-batches, {watch.rows:,} rows, "
          f"sink {config.sink_id!r} of {table}")
    if end:
        print("  offsets    next offset to load, per topic partition (from -> to)")
        for line in offset_lines(PROG, start, end):
            print(line)
    if source.embedded:
        print_embedded(source, table)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(PROG, read_config, run, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Following a running stream: each committed micro-batch reported once, and a stop after the one in flight."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_spark.offsets.ranges import offsets_to_json
from kafka_spark.sink import LoadResult, MultiLoadResult
from kafka_spark.spark.source.progress import offsets_behind_latest

if TYPE_CHECKING:
    from kafka_spark.app.metrics import StreamMetrics

# How long a stop request waits for the micro-batch in flight before stopping the query anyway.
STOP_GRACE_SECONDS = 120.0


class Watch:
    """Pairs each committed micro-batch with its progress report (for the lag) and prints it once; a routed
    stream's micro-batch (`on_trigger`) is printed by `show_tables`, one line per table."""

    def __init__(self, note: Callable[[str], None], as_json: bool,
                 show_tables: Callable[[int, MultiLoadResult], None] | None = None,
                 metrics: StreamMetrics | None = None, version_label: str = "Delta version") -> None:
        self.note = note
        self.version_label = version_label  # what a result's table_version is, in a line: its format's name for it
        self.metrics = metrics
        self.as_json = as_json
        self.show_tables = show_tables
        self.committed: dict[int, LoadResult | MultiLoadResult] = {}
        self.shown: set[int] = set()
        self.lock = threading.Lock()
        # Set when a stop is asked for: called once, on a thread of its own, right after the next commit.
        self.stop_after_commit: Callable[[], None] | None = None

    def on_trigger(self, batch_id: int, result: MultiLoadResult) -> None:
        self.on_commit(batch_id, result)

    def on_commit(self, batch_id: int, result: LoadResult | MultiLoadResult) -> None:
        if self.metrics is not None:
            self.metrics.record(batch_id, result)
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

    def _print(self, batch_id: int, result: LoadResult | MultiLoadResult, progress: Any) -> None:
        if isinstance(result, MultiLoadResult):
            if self.show_tables is not None:
                self.show_tables(batch_id, result)
            return
        source = progress.sources[0] if progress is not None and progress.sources else None
        lag = offsets_behind_latest(source) if source is not None else {}
        if self.metrics is not None and source is not None:
            self.metrics.lag_from_progress(source, result.offsets)
        fresh = result.freshness
        if self.as_json:
            print(json.dumps({"micro_batch": batch_id, "batch": result.batch, "rows": result.rows,
                              "dead_letters": result.dead_letters,
                              "table_version": result.table_version,
                              "offsets": json.loads(offsets_to_json(result.offsets)),
                              "seconds": round(result.seconds, 3), "behind_latest": lag,
                              **({"freshness_ms": fresh.summary()} if fresh is not None else {}),
                              **({"compaction": result.compaction.summary()} if result.compaction else {})}),
                  flush=True)
            return
        behind = (f"; behind latest: max {int(lag['maxOffsetsBehindLatest']):,}, "
                  f"avg {float(lag['avgOffsetsBehindLatest']):,.1f} per partition" if lag else "")
        dead = f" (+{result.dead_letters:,} to the dead-letter table)" if result.dead_letters else ""
        self.note(f"micro-batch {batch_id}: committed batch {result.batch} "
                  f"({self.version_label} {result.table_version}), {result.rows:,} rows{dead} in "
                  f"{result.seconds:.1f}s{behind}{freshness_text(result)}"
                  + (f"; {result.compaction.text(self.version_label)}" if result.compaction else ""))

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.committed.values())


def freshness_text(result: LoadResult) -> str:
    """'; freshness p50 0.3s, p99 0.9s, max 1.2s' (commit time minus the records' timestamps), or ''."""
    fresh = result.freshness
    if fresh is None:
        return ""
    return (f"; freshness p50 {fresh.p50_ms / 1000:.1f}s, p99 {fresh.p99_ms / 1000:.1f}s, "
            f"max {fresh.max_ms / 1000:.1f}s")


def follow_query(query: Any, watch: Watch, stop: threading.Event, note: Callable[[str], None]) -> str:
    """Follow the query until it ends or a stop is asked for; return how it ended."""
    while query.isActive:
        if stop.is_set():
            note("stopping: letting the micro-batch in flight finish...")
            _stop_after_batch(query, watch)
            watch.show(query.recentProgress, final=True)
            return "stopped"
        query.awaitTermination(0.5)
        watch.show(query.recentProgress)
    error = query.exception()
    watch.show(query.recentProgress, final=True)
    if error is not None:
        raise error
    return "finished"


def _stop_after_batch(query: Any, watch: Watch) -> None:
    # Only the trigger running now: a busy stream starts the next one at once, so waiting for an idle
    # moment could last until the grace period ends.
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    watch.stop_after_commit = query.stop
    last = _last_batch_id(query)
    # The micro-batch in flight stops the query after its commit (Watch.on_commit); a trigger that had no
    # data, or none running, means an idle moment: stop then.
    while query.isActive and time.monotonic() < deadline:
        if not query.status["isTriggerActive"] or _last_batch_id(query) != last:
            break
        time.sleep(0.02)
    watch.stop_after_commit = None
    query.stop()


def _last_batch_id(query: Any) -> int:
    progress = query.lastProgress
    return progress.batchId if progress is not None else -1

"""A stream's figures for Prometheus: per table rows, bytes, commits, retries, commit seconds, lag, freshness,
dead letters, failures and the stream's compactions (runs, seconds, files removed and added, the table's file
count after each, failed runs), in the client library's own registry and text exposition (`prometheus-client`, the
`metrics` extra).

`kafka-spark stream --metrics-port N` serves them; from Python, `StreamMetrics` is the hook: pass
`metrics.record` as a stream's `on_commit` (or `on_trigger` for a table per topic) and serve
`metrics.registry` with the client library, or call `metrics.serve(port)`.

The library is imported only when metrics are asked for, so a runtime without the extra works as before.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_from_json
from kafka_spark.sink import LoadResult, MultiLoadResult
from kafka_spark.sink.results import Compaction

EXTRA_HINT = "pip install 'kafka-spark[metrics]'"
# Loopback unless asked otherwise: the figures name tables and topics, which a host need not publish.
DEFAULT_ADDRESS = "127.0.0.1"
# Commit times from a quiet 1-second trigger to a large catch-up micro-batch.
COMMIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# The freshness gauge's `quantile` label -> the Freshness field.
FRESHNESS_QUANTILES = {"0.5": "p50_ms", "0.99": "p99_ms", "1": "max_ms"}


def require_client() -> None:
    """ConfigError naming the extra when the Prometheus client library is not installed."""
    _client()


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ConfigError(f"metrics need the Prometheus client library, the `metrics` extra: {EXTRA_HINT}") from None
    return prometheus_client


class StreamMetrics:
    """The metrics of one sink's tables in a registry of their own (`registry`); `table` names the table of
    results that carry none (a stream into one table)."""

    def __init__(self, sink_id: str, table: str = "", registry: Any = None) -> None:
        client = _client()
        self.sink_id, self.table = sink_id, table
        self.registry = registry if registry is not None else client.CollectorRegistry()
        labels = ("sink", "table")

        def made(kind: Any, name: str, doc: str, extra: tuple[str, ...] = (), **kw: Any) -> Any:
            return kind(name, doc, labels + extra, registry=self.registry, **kw)

        self.rows = made(client.Counter, "kafka_spark_rows", "Rows committed to the table")
        self.commits = made(client.Counter, "kafka_spark_commits", "Commits of rows and offsets to the table")
        self.bytes = made(client.Counter, "kafka_spark_bytes", "Bytes of the data files committed to the table")
        self.retries = made(client.Counter, "kafka_spark_retries",
                            "Writes of a batch done again before its commit (a subject version registered during "
                            "the read, a direct write handed to Spark's writer)")
        self.commit_seconds = made(client.Histogram, "kafka_spark_commit_seconds",
                                   "Wall time of each committed micro-batch or load of the table",
                                   buckets=COMMIT_BUCKETS)
        self.lag = made(client.Gauge, "kafka_spark_lag_records",
                        "Offsets on the brokers not yet in the table, at the latest offsets the stream learned")
        self.freshness = made(client.Gauge, "kafka_spark_freshness_seconds",
                              "Last commit time minus its records' Kafka timestamps (quantile 1: the oldest record)",
                              ("quantile",))
        self.dead_letters = made(client.Counter, "kafka_spark_dead_letters",
                                 "Records written to the dead-letter table instead of the table")
        self.failures = made(client.Counter, "kafka_spark_failures", "Commits of the table that failed")
        self.last_commit = made(client.Gauge, "kafka_spark_last_commit_timestamp_seconds",
                                "When the table's last commit landed (Unix time)")
        self.compactions = made(client.Counter, "kafka_spark_compactions",
                                "Compactions of the table the stream ran (commits that change no data)")
        self.compaction_seconds = made(client.Counter, "kafka_spark_compaction_seconds",
                                       "Wall time the stream spent compacting the table (and vacuuming after)")
        self.compaction_failures = made(client.Counter, "kafka_spark_compaction_failures",
                                        "Compactions of the table that failed (the stream goes on and tries again)")
        self.files_compacted = made(client.Counter, "kafka_spark_compacted_files",
                                    "Data files compaction removed from the table (rewritten into fewer)")
        self.files_written = made(client.Counter, "kafka_spark_compaction_written_files",
                                  "Data files compaction added to the table")
        self.table_files = made(client.Gauge, "kafka_spark_table_files",
                                "Active data files of the table after its last compaction")

    def record(self, batch_id: int | None, result: LoadResult | MultiLoadResult) -> None:
        """Count a committed micro-batch or load (the shape of a stream's `on_commit` / `on_trigger`)."""
        if isinstance(result, MultiLoadResult):
            for one in result.tables:
                self._record(one)
            self.set_lag(result.lag())
        else:
            self._record(result)

    def _record(self, result: LoadResult) -> None:
        labels = {"sink": result.sink_id or self.sink_id, "table": result.table or self.table}
        if result.compaction is not None:
            self._compacted(labels, result.compaction)
        if result.status == "failed":
            self.failures.labels(**labels).inc()
            return
        if result.status != "committed":
            return
        self.rows.labels(**labels).inc(result.rows)
        self.commits.labels(**labels).inc()
        self.bytes.labels(**labels).inc(result.bytes)
        self.retries.labels(**labels).inc(result.retries)
        self.commit_seconds.labels(**labels).observe(result.seconds)
        if result.dead_letters:
            self.dead_letters.labels(**labels).inc(result.dead_letters)
        fresh = result.freshness
        if fresh is not None:
            for quantile, attr in FRESHNESS_QUANTILES.items():
                self.freshness.labels(**labels, quantile=quantile).set(getattr(fresh, attr) / 1000)
            self.last_commit.labels(**labels).set(fresh.committed_at_ms / 1000)
        else:
            self.last_commit.labels(**labels).set(time.time())

    def _compacted(self, labels: dict[str, str], done: Compaction) -> None:
        if done.error:
            self.compaction_failures.labels(**labels).inc()
            return
        if done.dry_run:
            return
        self.compactions.labels(**labels).inc()
        self.compaction_seconds.labels(**labels).inc(done.seconds)
        self.files_compacted.labels(**labels).inc(done.removed)
        self.files_written.labels(**labels).inc(done.added)
        self.table_files.labels(**labels).set(done.files_after)

    def set_lag(self, lags: Mapping[str, int]) -> None:
        """Each table's lag in records (a table of `lags` by name; "" is this stream's own table)."""
        for table, lag in lags.items():
            self.lag.labels(sink=self.sink_id, table=table or self.table).set(lag)

    def lag_from_progress(self, source: Any, offsets: Mapping[Any, int]) -> None:
        """The one table's lag from a source progress's `latestOffset` against the committed `offsets`."""
        latest_text = source.get("latestOffset") if isinstance(source, Mapping) else getattr(source, "latestOffset",
                                                                                           None)
        if latest_text in (None, "null") or not offsets:
            return
        text = latest_text if isinstance(latest_text, str) else json.dumps(latest_text)
        latest = offsets_from_json(text, "progress latestOffset")
        if all(tp in latest for tp in offsets):
            self.set_lag({"": sum(max(latest[tp] - end, 0) for tp, end in offsets.items())})

    def serve(self, port: int, address: str = DEFAULT_ADDRESS) -> MetricsServer:
        """Serve the registry in Prometheus' text format at http://address:port/ (any path) until closed."""
        client = _client()
        try:
            server, thread = client.start_http_server(port, addr=address, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"--metrics-port: cannot serve metrics on {address}:{port}: {exc.strerror}") from None
        return MetricsServer(server, thread)


class MetricsServer:
    """A running metrics endpoint; `close()` stops it."""

    def __init__(self, server: Any, thread: Any) -> None:
        self.server, self.thread = server, thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

"""The stream's Prometheus metrics (kafka_spark/app/metrics.py) from results, read back with the client
library's own parser; the --metrics-port settings."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kafka_spark.app.metrics import StreamMetrics
from kafka_spark.app.settings import StreamConfig, check_stream
from kafka_spark.app.stream import build_parser, config_from_args
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadResult, MultiLoadResult
from kafka_spark.sink.freshness import Freshness
from kafka_spark.sink.results import Compaction


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_one_table_stream_counts_commits_rows_freshness_and_lag():
    metrics = StreamMetrics("s1", "/lake/t")
    tp = TopicPartition("orders", 0)
    fresh = Freshness(p50_ms=300, p99_ms=900, max_ms=1200, committed_at_ms=1_700_000_000_000)
    metrics.record(0, LoadResult("committed", "s1", 0, rows=10, seconds=0.4, offsets={tp: 10}, freshness=fresh,
                                 bytes=4096))
    metrics.record(1, LoadResult("committed", "s1", 1, rows=5, seconds=0.2, offsets={tp: 15}, dead_letters=2,
                                 bytes=1024, retries=1))
    metrics.record(2, LoadResult("up-to-date", "s1", 1))
    metrics.lag_from_progress({"latestOffset": '{"orders": {"0": 18}}'}, {tp: 15})
    got = samples(generate_latest(metrics.registry).decode())
    table = (("sink", "s1"), ("table", "/lake/t"))
    assert got[("kafka_spark_rows_total", table)] == 15
    assert got[("kafka_spark_commits_total", table)] == 2
    assert got[("kafka_spark_bytes_total", table)] == 5120
    assert got[("kafka_spark_retries_total", table)] == 1
    assert got[("kafka_spark_commit_seconds_count", table)] == 2
    assert got[("kafka_spark_commit_seconds_sum", table)] == pytest.approx(0.6)
    assert got[("kafka_spark_dead_letters_total", table)] == 2
    assert got[("kafka_spark_lag_records", table)] == 3
    assert got[("kafka_spark_freshness_seconds", (("quantile", "0.99"), *table))] == pytest.approx(0.9)
    assert got[("kafka_spark_freshness_seconds", (("quantile", "1"), *table))] == pytest.approx(1.2)


def test_routed_results_are_labelled_per_table_with_failures_and_lag():
    metrics = StreamMetrics("bronze")
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    result = MultiLoadResult([LoadResult("committed", "bronze", 3, rows=7, table="t_a", topic="a", offsets={a: 7}),
                              LoadResult("failed", "bronze", None, table="t_b", topic="b", error="boom")],
                             latest={a: 9, b: 4})
    metrics.record(3, result)
    got = samples(generate_latest(metrics.registry).decode())
    assert got[("kafka_spark_rows_total", (("sink", "bronze"), ("table", "t_a")))] == 7
    assert got[("kafka_spark_lag_records", (("sink", "bronze"), ("table", "t_a")))] == 2
    assert got[("kafka_spark_failures_total", (("sink", "bronze"), ("table", "t_b")))] == 1
    assert ("kafka_spark_rows_total", (("sink", "bronze"), ("table", "t_b"))) not in got


def test_compactions_count_runs_seconds_files_and_failures():
    metrics = StreamMetrics("s1", "/lake/t")
    ran = Compaction(files_before=31, files_after=2, removed=30, added=1, table_version=40, seconds=0.5)
    metrics.record(30, LoadResult("committed", "s1", 30, rows=3, compaction=ran))
    again = Compaction(files_before=32, files_after=3, removed=30, added=1, table_version=72, seconds=0.25)
    metrics.record(60, LoadResult("committed", "s1", 60, rows=3, compaction=again))
    metrics.record(90, LoadResult("committed", "s1", 90, rows=3, compaction=Compaction(error="commit conflict")))
    metrics.record(91, LoadResult("committed", "s1", 91, rows=3, compaction=Compaction(dry_run=True, removed=9)))
    got = samples(generate_latest(metrics.registry).decode())
    table = (("sink", "s1"), ("table", "/lake/t"))
    assert got[("kafka_spark_compactions_total", table)] == 2
    assert got[("kafka_spark_compaction_seconds_total", table)] == pytest.approx(0.75)
    assert got[("kafka_spark_compacted_files_total", table)] == 60
    assert got[("kafka_spark_compaction_written_files_total", table)] == 2
    assert got[("kafka_spark_table_files", table)] == 3  # after the last compaction that ran
    assert got[("kafka_spark_compaction_failures_total", table)] == 1
    assert got[("kafka_spark_commits_total", table)] == 4  # the micro-batches' own commits, compacted or not


def test_serve_binds_loopback_and_speaks_the_text_format():
    metrics = StreamMetrics("s", "t")
    metrics.record(0, LoadResult("committed", "s", 0, rows=4, seconds=0.1))
    server = metrics.serve(0)
    try:
        assert server.server.server_address[0] == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        server.close()
    assert samples(text)[("kafka_spark_rows_total", (("sink", "s"), ("table", "t")))] == 4


def test_metrics_settings_from_flags_and_their_errors():
    config = config_from_args(build_parser().parse_args(["--metrics-port", "9464", "--metrics-address", "0.0.0.0"]),
                              environ={})
    assert (config.metrics_port, config.metrics_address) == (9464, "0.0.0.0")
    assert config_from_args(build_parser().parse_args([]), environ={"KAFKA_SPARK_METRICS_PORT": "9000"}
                            ).metrics_port == 9000
    with pytest.raises(ConfigError, match="--metrics-port"):
        config_from_args(build_parser().parse_args(["--metrics-port", "70000"]), environ={})
    with pytest.raises(ConfigError, match="only applies with --metrics-port"):
        check_stream(StreamConfig(metrics_address="0.0.0.0"))


def test_a_missing_client_library_is_an_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch):
    import sys

    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # what an import of an absent package does
    with pytest.raises(ConfigError, match=r"kafka-spark\[metrics\]"):
        check_stream(StreamConfig(metrics_port=9464))
    assert check_stream(StreamConfig()).metrics_port is None  # and without the port nothing needs it

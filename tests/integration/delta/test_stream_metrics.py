"""`kafka-spark stream --metrics-port` on a real broker and Delta table: the endpoint is scraped while the stream
runs and read with the Prometheus client library's own parser; its figures match the table (rows committed =
rows in the table, lag 0 once the producer has stopped), and each micro-batch reports its freshness."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow as pa
from delta_support import JOBS, REPO, produce, table_rows
from deltalake import DeltaTable
from prometheus_client.parser import text_string_to_metric_families

JOB = JOBS / "stream_to_delta.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[str, float] | None:
    """Each sample of the stream's table by name (quantile samples as name{quantile}); None while not serving."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("sink") == "metrics-test":
                quantile = s.labels.get("quantile")
                found[s.name + (f"{{{quantile}}}" if quantile else "")] = s.value
    return found


def test_metrics_endpoint_matches_the_table_while_the_stream_runs(kafka, topic_name: str, tmp_path: Path):
    kafka.create_topic(topic_name, partitions=2)
    produce(kafka.bootstrap, topic_name, 500)
    table, port = tmp_path / "events", free_port()
    out, err = (tmp_path / "stdout").open("w"), (tmp_path / "stderr").open("w")
    proc = subprocess.Popen([sys.executable, str(JOB), "-b", kafka.bootstrap, "--topic", topic_name, "--table",
                             str(table), "--sink-id", "metrics-test", "--trigger", "1s", "--writer", "direct",
                             "--metrics-port", str(port), "--json"], cwd=REPO, stdout=out, stderr=err)
    try:
        produced, seen = 500, None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            seen = scrape(port)
            rows = (seen or {}).get("kafka_spark_rows_total", 0)
            if rows >= 500 and produced == 500:
                produce(kafka.bootstrap, topic_name, 300, start=500)  # a second micro-batch or more, then stop
                produced = 800
            if rows == produced == 800 and seen and seen.get("kafka_spark_lag_records") == 0:
                break
            time.sleep(0.5)
        assert seen is not None and seen.get("kafka_spark_rows_total") == 800, (seen, (tmp_path / "stderr")
                                                                               .read_text()[-3000:])
        assert seen["kafka_spark_lag_records"] == 0
        assert len(table_rows(table)) == 800
        assert seen["kafka_spark_commits_total"] >= 2
        assert seen["kafka_spark_commit_seconds_count"] == seen["kafka_spark_commits_total"]
        assert seen["kafka_spark_commit_seconds_sum"] > 0
        sizes = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).column("size_bytes").to_pylist()
        assert seen["kafka_spark_bytes_total"] == sum(sizes) > 0  # every data file the stream added, once
        # Freshness of the last commit: the records are seconds old at most, never from the future.
        assert 0 <= seen["kafka_spark_freshness_seconds{0.5}"] <= seen["kafka_spark_freshness_seconds{1}"] < 300
        assert seen.get("kafka_spark_failures_total", 0) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        out.close()
        err.close()
    assert code == 0
    lines = [json.loads(line) for line in (tmp_path / "stdout").read_text().splitlines() if line.startswith("{")]
    batches = [line for line in lines if "micro_batch" in line and line.get("rows")]
    assert sum(b["rows"] for b in batches) == 800
    assert all(set(b["freshness_ms"]) == {"p50", "p99", "max"} for b in batches)
    assert all(0 <= b["freshness_ms"]["p50"] <= b["freshness_ms"]["p99"] <= b["freshness_ms"]["max"] for b in batches)

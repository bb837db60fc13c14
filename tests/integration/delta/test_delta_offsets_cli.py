"""`kafka-spark delta-offsets`: the offsets a table holds (from its files alone) and their lag on the brokers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from delta_support import delta_offsets

from kafka_spark.client import KafkaClient, Producer, TopicPartition
from kafka_spark.delta.lag import table_lag

REPO = Path(__file__).resolve().parents[3]


def run_job(*args: str) -> dict[str, Any]:
    proc = subprocess.run([str(REPO / "spark-submit.sh"), str(REPO / "jobs" / "kafka_to_delta.py"), *args, "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=400, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])


def produce(bootstrap: str, topic: str, count: int) -> None:
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for n in range(count):
            producer.send(topic, b"v%d" % n, key=b"k%d" % (n % 11))
        producer.flush()


def test_offsets_and_lag_match_the_job_and_the_brokers(kafka, topic_name: str, tmp_path: Path):
    kafka.create_topic(topic_name, partitions=2)
    produce(kafka.bootstrap, topic_name, 400)
    table = tmp_path / "table"
    loaded = run_job("-b", kafka.bootstrap, "--topics", topic_name, "--table", str(table), "--sink-id", "orders")

    offline = delta_offsets(str(table), "--json")
    assert offline.returncode == 0, offline.stderr
    # the direct writer's commit says how old its records were when it was committed, as the job reported
    assert loaded["writer"] == "direct"
    assert json.loads(offline.stdout) == {
        "orders": {"batch": 0, "committed_at_ms": json.loads(offline.stdout)["orders"]["committed_at_ms"],
                   "offsets": loaded["offsets"], "freshness_ms": loaded["freshness_ms"]}}
    assert 0 <= loaded["freshness_ms"]["p50"] <= loaded["freshness_ms"]["p99"] <= loaded["freshness_ms"]["max"]

    produce(kafka.bootstrap, topic_name, 150)
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        latest = client.latest_offsets(client.partitions(topic_name))
    committed = {TopicPartition(topic_name, int(p)): o for p, o in loaded["offsets"][topic_name].items()}
    want_lag = {str(tp.partition): latest[tp] - committed[tp] for tp in committed}
    assert sum(want_lag.values()) == 150

    online = delta_offsets(str(table), "--sink", "orders", "-b", kafka.bootstrap, "--json")
    assert online.returncode == 0, online.stderr
    report = json.loads(online.stdout)["orders"]
    assert report["offsets"] == loaded["offsets"]
    assert report["lag"] == {topic_name: want_lag}
    assert report["latest"] == {topic_name: {str(tp.partition): o for tp, o in latest.items()}}
    assert report["total_lag"] == 150

    text = delta_offsets(str(table), "-b", kafka.bootstrap)
    assert text.returncode == 0, text.stderr
    assert "sink orders: batch 0" in text.stdout and "total lag: 150 records" in text.stdout
    assert f"; records {loaded['freshness_ms']['p50'] / 1000:.1f}s old (p50)" in text.stdout
    for p, off in loaded["offsets"][topic_name].items():
        assert any(line.split()[:3] == [topic_name, p, str(off)] for line in text.stdout.splitlines())

    unknown = delta_offsets(str(table), "--sink", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == f"kafka-spark: error: sink 'nope' has not committed to {table} (sinks: orders)"

    # A partition added to the topic after the load is lag too: the next load reads it from its start.
    kafka.tools.run("topics", "--alter", "--topic", topic_name, "--partitions", "3")
    produce(kafka.bootstrap, topic_name, 60)
    lag = table_lag(table, {"bootstrap.servers": kafka.bootstrap})["orders"]
    assert lag.new_partitions == (TopicPartition(topic_name, 2),)
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        now = client.latest_offsets(client.partitions(topic_name))
    assert lag.lag[TopicPartition(topic_name, 2)] == now[TopicPartition(topic_name, 2)]
    assert lag.total == sum(now.values()) - sum(committed.values())


def test_not_a_table(tmp_path: Path):
    missing = delta_offsets(str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"kafka-spark: error: {tmp_path / 'nothing'}: no such table directory"
    plain = delta_offsets(str(tmp_path))
    assert plain.returncode == 2
    assert "is not a Delta table" in plain.stderr

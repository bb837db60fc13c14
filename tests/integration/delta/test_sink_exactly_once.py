"""Exactly-once Kafka -> Delta loads: crashes at any point, re-runs and resumes lose and duplicate nothing."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from deltalake import DeltaTable

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.offsets import latest_offsets
from kafka_spark.delta import committed_position
from kafka_spark.delta.log import DeltaLog
from kafka_spark.delta.sink import CRASH_ENV

HERE = Path(__file__).parent


def produce(producer, topic: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i % 11).encode())
    producer.flush()


def _run_load(bootstrap: str, topic: str, table: str, cap: int, crash_at: str | None = None,
              kill_after: float | None = None) -> tuple[int, str]:
    env = {**os.environ}
    if crash_at:
        env[CRASH_ENV] = crash_at
    proc = subprocess.Popen([sys.executable, str(HERE / "load_once.py"), bootstrap, topic, table, str(cap)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=kill_after) if kill_after else proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        # A crash at a random moment: the driver and its JVM die together, as on a lost machine.
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return -9, out
    finally:
        # spark-submit's JVM lives in the same process group; leave nothing behind.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out


def test_sigkill_at_random_points_keeps_every_record_exactly_once(kafka, spark, producer, topic_name, tmp_path):
    kafka.tools.create_topic(topic_name, partitions=3)
    produce(producer, topic_name, 3000)
    table = str(tmp_path / "table")
    stop = threading.Event()

    def keep_producing() -> None:
        n = 3000
        while not stop.is_set():
            produce(producer, topic_name, 50, start=n)
            n += 50
            time.sleep(0.2)

    feeder = threading.Thread(target=keep_producing, daemon=True)
    feeder.start()
    rng = random.Random(20261121)
    # Targeted points of the commit protocol, then kills at random moments of a run; a random kill
    # that comes after the run already finished counts as a clean run, and another kill is tried.
    plan = ["before-write", "after-commit", "before-write", "after-commit"]
    outcomes = []
    try:
        attempts = 0
        while sum(1 for _, code in outcomes if code != 0) < 10 and attempts < 18:
            crash_at = plan[attempts] if attempts < len(plan) else None
            kill_after = None if crash_at else rng.uniform(3.0, 14.0)
            code, _ = _run_load(kafka.bootstrap, topic_name, table, 1500, crash_at=crash_at, kill_after=kill_after)
            outcomes.append((crash_at or f"kill@{kill_after:.1f}s", code))
            attempts += 1
    finally:
        stop.set()
        feeder.join()
    kills = [o for o in outcomes if o[1] != 0]
    assert len(kills) >= 10, outcomes
    # Catch up with no crash until the table has everything.
    with Cluster({"bootstrap.servers": kafka.bootstrap}) as cluster:
        from kafka_spark.client.metadata import TopicPartition

        latest = latest_offsets(cluster, [TopicPartition(topic_name, p) for p in range(3)])
    for _ in range(10):
        code, out = _run_load(kafka.bootstrap, topic_name, table, 1_000_000)
        assert code == 0, out
        if json.loads(out.strip().splitlines()[-1])["status"] == "up-to-date":
            break
    rows = spark.read.format("delta").load(table)
    dupes = rows.groupBy("topic", "partition", "offset").count().where("count > 1").count()
    assert dupes == 0
    for tp, end in latest.items():
        offsets = [r[0] for r in rows.where(f"partition = {tp.partition}").select("offset").collect()]
        assert sorted(offsets) == list(range(end)), f"{tp}: missing or extra offsets"
    # The Delta log, read independently, agrees with the position we resume from.
    position = committed_position(table, "crash-test")
    dt = DeltaTable(table)
    assert dt.transaction_version("kafka-spark/crash-test") == position.batch
    meta = json.loads(dt.history(1)[0]["userMetadata"])
    assert meta["batch"] == position.batch
    assert {int(p): o for p, o in meta["offsets"][topic_name].items()} == {
        tp.partition: off for tp, off in position.offsets.items()}
    assert DeltaLog(table).transactions()["kafka-spark/crash-test"].version == position.batch

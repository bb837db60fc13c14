"""PostgreSQL -> Debezium's PostgreSQL connector on Kafka Connect -> Kafka -> `kafka-spark stream --cdc debezium`
-> Delta, nothing in between mocked. After Debezium's initial snapshot, a seeded random workload (workload.py) runs
while the stream, routed a table per topic, is SIGKILLed (right after a table's commit, then at random moments;
some restarts without the checkpoint; the runs alternate Spark's MERGE and delta-rs's) and the Connect worker is
SIGKILLed too (it re-sends the changes after its last flushed offset: Debezium delivers at least once). A last run
(the library's `start_stream`, in the test's Spark session) catches up; then every Delta table, read by delta-rs,
equals its PostgreSQL table row by row, and holds the offsets of its topic's end.

The suite runs one kill of the stream (right after a commit, by Spark's MERGE; the catch-up run is delta-rs's) and one
of the worker, with a short workload; `KAFKA_SPARK_KILLS=10` runs the long schedule, random moments included (the
workload grows with it)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from workload import KEYS, TABLES, TOPIC_PREFIX, Workload, delta_rows, postgres_columns, postgres_rows

from kafka_spark.client import KafkaClient
from kafka_spark.delta import committed_position, start_stream
from kafka_spark.sink import Routing, StreamOptions
from kafka_spark.sink.change_capture import METADATA_COLUMNS
from kafka_spark.sink.crash import CRASH_ENV

pytestmark = [pytest.mark.integration, pytest.mark.spark]

KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "1"))
STEPS_PER_KILL = 20
SINK = "cdc"
# The same through the schema registry with Avro (Apicurio's converter and registry) in the long schedule, its topics
# under a prefix of their own on the suite's broker.
LONG = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "1")) <= 2, reason="long: KAFKA_SPARK_KILLS=10")
PREFIXES = {"json": TOPIC_PREFIX, "avro": "dbserver2"}


def topic(table: str, converter: str = "json") -> str:
    return f"{PREFIXES[converter]}.public.{table}"


def pattern(converter: str) -> str:
    return rf"^{PREFIXES[converter]}\.public\."
WRITERS = ("spark", "direct")


def stream_argv(bootstrap: str, lake: Path, writer: str, converter: str, decoding: list[str]) -> list[str]:
    """`kafka-spark stream` as a user runs it: every table of the database, a Delta table per topic."""
    return [sys.executable, "-m", "kafka_spark.cli", "stream", "-b", bootstrap, "--pattern", pattern(converter),
            "--table-template", f"{lake}/{{topic}}", "--cdc", "debezium", "--cdc-metadata", "true",
            "--sink-id", SINK, "--trigger", "1s", "--writer", writer, "--json", *decoding]


def run_killed(argv: list[str], log: Path, crash_at: str | None = None, kill_delay: float = 0.0,
               timeout: float = 300) -> int:
    """Run the stream until it dies: with `crash_at` it kills itself at that point of its first commit, else it is
    SIGKILLed (with its JVM) `kill_delay` seconds after its first commit. Its exit code."""
    env = {**os.environ, **({CRASH_ENV: crash_at} if crash_at else {})}
    with open(log, "a") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
                                env=env, start_new_session=True)
    committed = threading.Event()

    def follow() -> None:  # --json prints a line per committed micro-batch
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                committed.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    try:
        if crash_at is None:
            deadline = time.monotonic() + timeout
            while not committed.wait(0.2) and proc.poll() is None and time.monotonic() < deadline:
                pass
            assert committed.is_set(), f"the stream committed nothing (exit {proc.poll()}):\n{_tail(log)}"
            time.sleep(kill_delay)
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM die together, as on a lost machine
        return proc.wait(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # a crash point kills the driver alone: its JVM goes too
        proc.wait()
        reader.join(10)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def changing(postgres: Any, workload: Workload, steps: int, seed: int) -> Iterator[None]:
    """The workload's transactions, one every 0.05-0.3 s, for as long as the block runs and at least `steps`."""
    done = threading.Event()
    failed: list[BaseException] = []
    rng = random.Random(seed)

    def run() -> None:
        n = 0
        try:
            while n < steps or not done.is_set():
                postgres.psql(workload.step(n, steps))
                n += 1
                time.sleep(rng.uniform(0.05, 0.3))
        except BaseException as exc:  # re-raised in the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(300)
    if failed:
        raise failed[0]


def end_offsets(bootstrap: str, topics: list[str]) -> dict[str, dict[int, int]]:
    """Each topic's end offset per partition."""
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        ends = client.latest_offsets([tp for t in topics for tp in client.partitions(t)])
    out: dict[str, dict[int, int]] = {t: {} for t in topics}
    for tp, offset in ends.items():
        out[tp.topic][tp.partition] = offset
    return out


def wait_for_events(bootstrap: str, ticks: int, converter: str = "json", timeout: float = 120
                    ) -> dict[str, dict[int, int]]:
    """Wait until Kafka holds the change events of `ticks` rows of `ticks` (so of every earlier transaction too:
    Debezium sends them in commit order) and every topic's end stays put for a second (a record of another
    partition may be acknowledged a moment later); the ends."""
    topics = [topic(t, converter) for t in TABLES]
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):  # a topic not created yet
            ends = end_offsets(bootstrap, topics)
            # a worker that was killed may have sent a tick twice: more is fine, the last one is there
            if sum(ends[topic("ticks", converter)].values()) >= ticks:
                time.sleep(1.0)
                if end_offsets(bootstrap, topics) == ends:
                    return ends
        assert time.monotonic() < deadline, f"Debezium did not send {ticks} ticks in {timeout:.0f}s"
        time.sleep(0.5)


@pytest.mark.parametrize("converter", ["json", pytest.param("avro", marks=LONG)])
def test_postgres_changes_through_debezium_reach_delta_exactly_through_sigkills(kafka, postgres, connect_worker,
                                                                               spark, tmp_path, request, converter):
    from harness.kafka_connect import debezium_postgres

    workload = Workload(seed=20261150)
    # a database's tables, the same for each converter's run (Debezium's slots are their own)
    postgres.psql("DROP TABLE IF EXISTS customers, orders, measurements, ticks;" + workload.seed_sql())
    prefix = PREFIXES[converter]
    # `measurements` is truncated: one partition, where Debezium's truncate is ordered with its other changes.
    connector = debezium_postgres(postgres, prefix, slot=f"debezium_{converter}", overrides={
        "topic.creation.default.partitions": 2,
        "topic.creation.groups": "truncated",
        "topic.creation.truncated.include": rf"{prefix}\\.public\\.measurements",
        "topic.creation.truncated.partitions": 1,
    })
    decoding: dict[str, object] = {}
    flags: list[str] = []
    if converter == "avro":
        from harness.apicurio import avro_converters, connect_classpath

        registry = request.getfixturevalue("registry").wait()
        worker = connect_worker({"inventory-avro": connector}, converters=avro_converters(registry.registry_url),
                                classpath=connect_classpath())
        decoding = {"value_format": "avro", "key_format": "avro", "schema_registry": {"url": registry.ccompat_url}}
        flags = ["--value-format", "avro", "--key-format", "avro", "--schema-registry", registry.ccompat_url]
    else:
        worker = connect_worker({"inventory": connector})
    wait_for_events(kafka.bootstrap, workload.ticks, converter)  # the initial snapshot is in Kafka

    lake = tmp_path / "lake"
    log = tmp_path / "stream.log"
    rng = random.Random(KILLS)
    outcomes: list[str] = []
    with changing(postgres, workload, STEPS_PER_KILL * KILLS, seed=KILLS):
        for attempt in range(KILLS):
            if attempt % 3 == 2:  # a restart without the checkpoint resumes from the tables alone
                shutil.rmtree(lake / "_kafka_spark" / "checkpoints", ignore_errors=True)
            writer = WRITERS[attempt % len(WRITERS)]
            crash_at = "after-commit" if attempt == 0 else None
            delay = rng.uniform(0.5, 4.0)
            code = run_killed(stream_argv(kafka.bootstrap, lake, writer, converter, flags), log, crash_at=crash_at,
                              kill_delay=delay)
            outcomes.append(f"{crash_at or f'kill@{delay:.1f}s'} ({writer}): {code}")
            assert code == -9, f"{outcomes}: the stream failed:\n{_tail(log)}"
            if attempt % 2 == 0:  # the worker dies too, while the database keeps changing
                worker.crash()
                worker.start()
    worker.check_running()
    assert workload.email and workload.truncated, "the workload's schedule did not run"
    postgres.psql(workload.tick())
    ends = wait_for_events(kafka.bootstrap, workload.ticks, converter)

    # The catch-up run, through the library in this process: from the last run's checkpoint and the tables to the end.
    query = start_stream(spark, StreamOptions(kafka={"bootstrap.servers": kafka.bootstrap}, pattern=pattern(converter),
                                              routing=Routing(template=f"{lake}/{{topic}}"), cdc="debezium",
                                              cdc_metadata=True, sink_id=SINK, writer="direct",
                                              trigger="available-now", **decoding))
    try:
        assert query.awaitTermination(300), "the catch-up run did not finish"
    finally:
        query.stop()
    assert query.exception() is None

    engines: set[str] = set()
    for table in TABLES:
        path = str(lake / topic(table, converter))
        columns = postgres_columns(postgres, table)
        assert delta_rows(path, table, columns) == postgres_rows(postgres, table), (table, outcomes)
        delta = DeltaTable(path)
        extra = {f.name for f in delta.schema().fields} - set(columns) - set(METADATA_COLUMNS)
        assert not extra, f"{table}: columns PostgreSQL does not have: {extra}"
        meta = delta.to_pyarrow_table(columns=["__op", "__lsn"]).to_pylist()
        assert all(r["__op"] in ("r", "c", "u") and r["__lsn"] is not None for r in meta), table
        # Exactly once: the table's last commit holds the topic's end, and its txn is that batch.
        position = committed_position(path, SINK)
        assert position is not None, table
        assert {tp.partition: o for tp, o in position.offsets.items()} == ends[topic(table, converter)], table
        assert delta.transaction_version(f"kafka-spark/{SINK}") == position.batch
        engines |= {c["engineInfo"].split("/")[0].split(":")[0] for c in delta.history() if c.get("userMetadata")}
    assert engines == {"Apache-Spark", "delta-rs"}, outcomes  # each writer continued the other's commits

    # Delta on Spark reads the same keys.
    customers = spark.read.format("delta").load(str(lake / topic("customers", converter)))
    keys = KEYS["customers"]
    assert sorted(tuple(r) for r in customers.select(*keys).collect()) == \
        [tuple(r[k] for k in keys) for r in postgres_rows(postgres, "customers")]

"""Exactly-once loads where lakehouse tables live: an s3a:// table and a catalog table by name, each load
SIGKILLed ten-plus times while records keep arriving, the two kill sequences side by side."""

from __future__ import annotations

import json
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from delta_support import (
    JOBS,
    REPO,
    keep_producing,
    latest_offsets_of,
    produce_numbered,
    run_job,
    run_killable,
    summary,
)
from deltalake import DeltaTable

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import committed_position
from kafka_spark.delta.storage import delta_rs_location
from kafka_spark.sink.table_names import is_table_name

# The long schedule only (KAFKA_SPARK_KILLS=10, the same command as for the others): the suite covers both sides of
# the commit and random moments on a local table (test_sink_exactly_once.py), an s3a table's loads, resumes and
# offsets (test_object_store_sink.py), and the files kept beside a table through a pyarrow file system as through
# the local disk (tests/unit/delta/test_table_files.py); the catalog table's commits are the local table's, under
# a name.
STORE_KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "1"))

LOAD_ONCE = Path(__file__).parent / "load_once.py"
JOB = JOBS / "kafka_to_delta.py"
SINK = "crash-test"
# Both sides of the commit first (the batch test repeats them), then kills at random moments after the
# session is up.
TARGETED = ("after-commit", "before-write")


def hive_catalog(root: Path) -> dict[str, str]:
    """Spark's built-in catalog kept in an embedded Derby metastore and a warehouse under `root`.

    Embedded Derby admits one JVM at a time: only the driver subprocesses open it, one after another.
    """
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root / 'metastore'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={root} -Dderby.stream.error.file={root / 'derby.log'}",
    }


@dataclass
class Run:
    """One driver run: how it ended (exit code; -9 when killed) and how long it ran after its session was up."""

    how: str
    code: int
    seconds: float


def run_once(bootstrap: str, topic: str, table: str, cap: int, conf: dict[str, str], crash_at: str | None = None,
             kill_after: float | None = None, writer: str | None = None) -> tuple[Run, str]:
    code, out = run_killable(LOAD_ONCE, bootstrap, topic, table, str(cap), *(f"{k}={v}" for k, v in conf.items()),
                             crash_at=crash_at, kill_after=kill_after, ready="session", writer=writer)
    ended = time.time()
    session = [float(line.split()[1]) for line in out.splitlines() if line.startswith("session ")]
    how = (f"{writer}:" if writer else "") + (crash_at or (f"kill@{kill_after:.1f}s" if kill_after is not None
                                                         else "run"))
    return Run(how, code, ended - session[0] if session else 0.0), out


def writers_for(table: str) -> tuple[str | None, ...]:
    """The writers a table's runs take in turn: both on a path or URI (the direct writer first), the
    default on a catalog table (which only Spark's writer serves)."""
    return (None,) if is_table_name(table) else ("direct", "spark")


def kill_repeatedly(bootstrap: str, topic: str, table: str, conf: dict[str, str], seed: int) -> list[Run]:
    """Kill load_once.py into `table` STORE_KILLS times: at both sides of the commit, then at random moments
    spread over the time a run takes to reach its commit on this store; the writers take turns."""
    rng = random.Random(seed)
    runs: list[Run] = []
    while sum(1 for r in runs if r.code != 0) < STORE_KILLS and len(runs) < STORE_KILLS + 8:
        crash_at = TARGETED[len(runs)] if len(runs) < len(TARGETED) else None
        # The last run killed at its commit says how long a run takes here (the first ones set up more).
        to_commit = ([r.seconds for r in runs if r.how.endswith("after-commit")] or [10.0])[-1]
        kill_after = None if crash_at else rng.uniform(0.2, to_commit)
        writers = writers_for(table)
        runs.append(run_once(bootstrap, topic, table, 1500, conf, crash_at, kill_after,
                             writers[len(runs) % len(writers)])[0])
    return runs


def catch_up(bootstrap: str, topic: str, table: str, conf: dict[str, str]) -> list[Run]:
    """Load with no crash until a run's committed offsets are the topic's ends (nothing is produced now)."""
    runs: list[Run] = []
    writers = writers_for(table)
    ends = {str(tp.partition): end for tp, end in latest_offsets_of(bootstrap, topic).items()}
    for attempt in range(10):
        run, out = run_once(bootstrap, topic, table, 1_000_000, conf, writer=writers[(attempt + 1) % len(writers)])
        runs.append(run)
        assert run.code == 0, out
        if json.loads(out.strip().splitlines()[-1])["offsets"].get(topic) == ends:
            return runs
    raise AssertionError(f"{table} did not catch up: {runs}")


def assert_exact(dt: DeltaTable, topic: str, ends: dict[TopicPartition, int]) -> None:
    """Rows = distinct (topic, partition, offset) = every offset produced, read by delta-rs."""
    rows = dt.to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert set(keys) == {(topic, tp.partition, o) for tp, end in ends.items() for o in range(end)}


@pytest.mark.timeout(3600)
@pytest.mark.skipif(STORE_KILLS <= 2, reason="long schedule: KAFKA_SPARK_KILLS=10 (the suite kills local tables, "
                                                "test_sink_exactly_once.py)")
def test_sigkills_on_an_s3a_table_and_a_catalog_table_keep_every_record_exactly_once(
        kafka, s3, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    produce_numbered(producer, topic_name, 3000)
    s3_table = s3.url(f"crash/{topic_name}")
    catalog = hive_catalog(tmp_path)
    name = "default.crash_orders"
    stores = {s3_table: s3.spark_conf(), name: catalog}
    killing = stores if STORE_KILLS > 1 else {s3_table: stores[s3_table]}
    with ThreadPoolExecutor(2) as pool, keep_producing(producer, topic_name, start=3000, step=50):
        killed = {t: pool.submit(kill_repeatedly, kafka.bootstrap, topic_name, t, conf, seed)
                  for seed, (t, conf) in enumerate(killing.items())}
        runs = {t: f.result() for t, f in killed.items()}
    # A table that was killed catches up with load_once.py; the catalog table, when not killed, is first loaded by
    # the job command below.
    with ThreadPoolExecutor(2) as pool:
        caught_up = {t: pool.submit(catch_up, kafka.bootstrap, topic_name, t, stores[t]) for t in killing}
        for table, future in caught_up.items():
            runs[table] += future.result()
    for table, seen in runs.items():
        print(f"{table}: " + ", ".join(f"{r.how}={r.code} {r.seconds:.1f}s" for r in seen))
        assert sum(1 for r in seen if r.code != 0) >= STORE_KILLS, table
    ends = latest_offsets_of(kafka.bootstrap, topic_name)

    # The s3a table, read without Spark: delta-rs for the log and rows, pyarrow for the kept offsets.
    uri, options = delta_rs_location(s3_table, s3.hadoop_conf())
    s3_dt = DeltaTable(uri, storage_options=options)
    assert_exact(s3_dt, topic_name, ends)
    position = committed_position(s3_table, SINK, s3.hadoop_conf())
    assert position is not None and position.offsets == ends
    assert s3_dt.transaction_version(f"kafka-spark/{SINK}") == position.batch

    # The catalog table, at its managed location in the warehouse (this process never opens the metastore).
    location = tmp_path / "warehouse" / "crash_orders"
    loaded = 0
    position = None
    if name in killing:
        catalog_dt = DeltaTable(str(location))
        assert_exact(catalog_dt, topic_name, ends)
        position = committed_position(location, SINK)
        assert position is not None and position.offsets == ends
        assert catalog_dt.transaction_version(f"kafka-spark/{SINK}") == position.batch
        loaded = sum(ends.values())

    # The job command of docs/delta/stores.md on the catalog table by name, then delta-offsets finding it through the
    # session's catalog. spark-submit.sh sets the driver's Java options itself: Derby's go in through
    # SPARK_SUBMIT_OPTS.
    submit_conf = {k: v for k, v in catalog.items() if k != "spark.driver.extraJavaOptions"}
    env = {**os.environ, "SPARK_SUBMIT_OPTS": catalog["spark.driver.extraJavaOptions"]}
    produce_numbered(producer, topic_name, 200, start=1_000_000)
    job = summary(run_job(JOB, "-b", kafka.bootstrap, "--topics", topic_name, "--table", name, "--sink-id", SINK,
                          "--json", spark_conf=submit_conf, env=env))
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    assert job["status"] == "committed" and job["rows"] == sum(ends.values()) - loaded
    assert job["batch"] == (position.batch + 1 if position is not None else 0)
    catalog_dt = DeltaTable(str(location))
    assert_exact(catalog_dt, topic_name, ends)
    # Created like saveAsTable: the first commit is the table's creation, every later one a write by name.
    assert catalog_dt.history()[-1]["operation"] == "CREATE TABLE"
    position = committed_position(location, SINK)
    assert position is not None and position.offsets == ends
    proc = run_job(REPO / "kafka_spark" / "cli" / "main.py", "delta-offsets", name, "--json",
                   spark_conf=submit_conf, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report, _ = json.JSONDecoder().raw_decode(proc.stdout, proc.stdout.index("{\n"))
    assert report[SINK]["batch"] == position.batch
    assert report[SINK]["offsets"] == {topic_name: {str(tp.partition): off for tp, off in sorted(ends.items())}}
    assert not (REPO / "derby.log").exists() and not (REPO / "metastore").exists()

"""Helpers of the Delta tests: running the jobs as users do (./spark-submit.sh), reading what they wrote,
and the crash tests' feeders and killable drivers."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.cache import private_cache

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink.crash import CRASH_ENV

REPO = Path(__file__).resolve().parents[3]
JOBS = REPO / "jobs"


def run_job(job: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 400,
            spark_conf: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`./spark-submit.sh [--conf k=v ...] job args`: `spark_conf` goes to spark-submit, `args` to the job."""
    conf = [f"--conf={k}={v}" for k, v in (spark_conf or {}).items()]
    return subprocess.run([str(REPO / "spark-submit.sh"), *conf, str(job), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def delta_offsets(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`kafka-spark delta-offsets args` in a fresh interpreter, failing if anything imports pyspark."""
    code = ("import sys; from kafka_spark.cli.main import main; rc = main(sys.argv[1:]); "
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'; sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, "delta-offsets", *args], capture_output=True, text=True,
                          timeout=120, check=False, env=None if env is None else dict(env))


def summary(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The --json summary; spark-submit merges the driver's stderr into stdout, so it is the last JSON line."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = json_lines(proc.stdout)
    assert lines, proc.stdout[-3000:]
    return lines[-1]


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 10}) as producer:
        futures = [producer.send(topic, f'{{"n":{n}}}'.encode(), key=f"k{n % 17}".encode())
                   for n in range(start, start + count)]
        producer.flush()
        for future in futures:
            future.get()


def latest_offsets_of(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    """The next offset of every partition of `topic`."""
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        return client.latest_offsets(client.partitions(topic))


def latest(bootstrap: str, topic: str) -> dict[str, dict[str, int]]:
    """The same, as the jobs print it: `{topic: {"0": offset}}`."""
    offsets = latest_offsets_of(bootstrap, topic)
    return {topic: {str(tp.partition): off for tp, off in sorted(offsets.items())}}


def table_rows(table: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return DeltaTable(str(table)).to_pyarrow_table().to_pylist()


def job_module(path: Path) -> Any:
    """A job file imported as a module (jobs/ on the path, as spark-submit runs it)."""
    if str(JOBS) not in sys.path:
        sys.path.insert(0, str(JOBS))
    name = f"job_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    job = importlib.util.module_from_spec(spec)
    sys.modules[name] = job  # dataclasses look their module up while the class is built
    spec.loader.exec_module(job)
    return job


def embedded_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose local broker (`kafka-spark local`) lives under tmp_path; jars and archives are shared."""
    return private_cache(tmp_path)


def stop_local_broker(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "kafka_spark.cli.main", "local", "stop"], env=env,
                   capture_output=True, text=True, timeout=120, check=False)


# ---- crash tests -----------------------------------------------------------------------------------------

# SIGKILLs per crash test. The suite runs a short schedule (after a commit, then at a random moment); the full
# schedules run from a documented command: KAFKA_SPARK_KILLS=10, or 100 for a long soak.
KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "2"))


def produce_numbered(producer: Producer, topic: str, n: int, start: int = 0,
                     encode: Callable[[int], bytes] | None = None) -> None:
    """Records `{"n": start}` .. `{"n": start + n - 1}` (JSON, or as `encode` makes the value of n), keyed so they
    spread over the partitions."""
    for i in range(start, start + n):
        producer.send(topic, encode(i) if encode else f'{{"n":{i}}}'.encode(), key=str(i % 7).encode())
    producer.flush()


@contextlib.contextmanager
def keep_producing(producer: Producer, topic: str, start: int, step: int,
                   encode: Callable[[int], bytes] | None = None) -> Iterator[None]:
    """Numbered records, `step` every 0.2 s from `start`, for as long as the block runs."""
    stop = threading.Event()

    def feed() -> None:
        n = start
        while not stop.is_set():
            produce_numbered(producer, topic, step, start=n, encode=encode)
            n += step
            time.sleep(0.2)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield
    finally:
        stop.set()
        feeder.join()


# The Delta writer a crash-test script uses ("spark", "direct", "auto"; the sink's default when unset).
WRITER_ENV = "KAFKA_SPARK_TEST_WRITER"
# Kill schedules alternate between the writers, so each resumes the other's commits.
WRITERS = ("spark", "direct")


def run_killable(script: Path, *args: str, crash_at: str | None = None, kill_after: float | None = None,
                 ready: str | None = None, writer: str | None = None) -> tuple[int, str]:
    """Run a driver script; with `kill_after`, SIGKILL it and its JVM that many seconds after it starts
    (or after it prints a line beginning with `ready`): exit code -9. Returns (exit code, stdout).
    `crash_at` makes the sink kill itself at that point of the commit protocol; `writer` picks the Delta
    writer of a script that reads WRITER_ENV."""
    env = {**os.environ, **({WRITER_ENV: writer} if writer else {})}
    if crash_at:
        env[CRASH_ENV] = crash_at
    # stderr kept aside for a failed run's message (a file: a pipe nobody reads could fill and block the run)
    with tempfile.TemporaryFile(mode="w+") as errors:
        code, out = _follow(subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                                             stderr=errors, text=True, env=env, start_new_session=True),
                            kill_after, ready)
        if code not in (0, -9):
            errors.seek(0)
            out += "--- stderr ---\n" + errors.read()[-6000:]
    return code, out


def _follow(proc: subprocess.Popen[str], kill_after: float | None, ready: str | None) -> tuple[int, str]:
    lines: list[str] = []
    is_ready = threading.Event()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if ready is not None and line.startswith(ready):
                is_ready.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    try:
        if kill_after is not None and ready is not None:
            deadline = time.monotonic() + 300
            while not is_ready.wait(0.2) and proc.poll() is None and time.monotonic() < deadline:
                pass
        proc.wait(timeout=kill_after or 300)
    except subprocess.TimeoutExpired:
        # The driver and its JVM die together, as on a lost machine.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(10)
        return -9, "".join(lines)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)
    return proc.returncode, "".join(lines)


# ---- the jobs' example configuration files ---------------------------------------------------------------


def check_example_config(job: Any, name: str, default: Any) -> None:
    """conf/<name> shows every key of the job, commented out, each example accepted; as shipped it sets
    nothing (so it runs the demo)."""
    import tomllib

    path = REPO / "conf" / name
    examples = dict(re.findall(r"^# ([a-z-]+) = (.*)$", path.read_text(), flags=re.M))
    assert set(examples) == set(job.FILE_KEYS)
    flags = {a.option_strings[0].removeprefix("--") for a in job.build_parser()._actions if a.option_strings}
    assert set(job.FILE_KEYS) <= flags
    for key, value in examples.items():
        if value != '"""':
            _, parse = job.FILE_KEYS[key]
            parse(tomllib.loads(f"{key} = {value}")[key], key)
    assert job.read_config(["--config", str(path)])[0] == default


def run_available_now(spark, options) -> int:
    """Run an AvailableNow `start_stream` query to its end; the rows it read."""
    from kafka_spark.delta import start_stream

    rows: list[int] = []
    given = options.on_commit

    def on_commit(batch_id: int, result) -> None:
        rows.append(result.rows)
        if given is not None:
            given(batch_id, result)

    # The commits' rows, not Spark's progress: a directly written micro-batch leaves the query's frame unread.
    run = dataclasses.replace(options, on_commit=on_commit)
    query = start_stream(spark, run)
    options.checkpoint = run.checkpoint  # where start_stream put it (beside a catalog table), as on `options`
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    return sum(rows)


STREAM_ONCE = Path(__file__).parent / "stream_once.py"
# Two kills per stream kill test in the suite; KAFKA_SPARK_KILLS for the long schedule.
STREAM_KILLS = int(os.environ.get("KAFKA_SPARK_KILLS", "2"))
STREAM_SINK_ID = "crash-test"  # stream_once.py's


def run_stream_once(bootstrap: str, topic: str, table: Path, trigger: str, seconds: float, limit: int = 400,
                    crash_at: str | None = None, kill_after: float | None = None, writer: str = "spark",
                    armed_after: int = 0) -> int:
    """One stream_once.py driver run with the sink's `writer`; `kill_after` counts from the query's start (a kill
    during JVM start-up proves little); `crash_at` is armed once the run has committed `armed_after` micro-batches."""
    return run_killable(STREAM_ONCE, bootstrap, topic, str(table), trigger, str(seconds), str(limit), writer,
                        str(armed_after), crash_at=crash_at, kill_after=kill_after, ready="started")[0]


def kill_stream_repeatedly(bootstrap: str, topic: str, table: Path, kills: int = STREAM_KILLS,
                           seed: int = 20261123, writers: tuple[str, ...] = ("spark", "direct")
                           ) -> list[tuple[str, int]]:
    """Run the stream into `table` until it was killed `kills` times: at both sides of the commit first, then at
    random moments; some restarts begin without the checkpoint, which must resume from the table alone. The
    attempts take turns with `writers`, so each continues where the other's commits and checkpoint left off."""
    import random
    import shutil

    checkpoint = table / "_kafka_spark" / "checkpoints" / STREAM_SINK_ID
    rng = random.Random(seed)
    plan = ["before-write", "after-commit"]
    outcomes: list[tuple[str, int]] = []
    attempt = 0
    while sum(1 for o in outcomes if o[1] != 0) < kills and attempt < 2 * kills:
        if attempt % 4 == 2 and checkpoint.exists():
            shutil.rmtree(checkpoint)
            outcomes.append(("checkpoint deleted", 0))
        crash_at = plan[attempt] if attempt < len(plan) else None
        kill_after = None if crash_at else rng.uniform(0.5, 6.0)
        writer = writers[attempt % len(writers)]
        # Armed after the run's first commit, a crash lands in a micro-batch after one Spark has committed: the
        # restart replays it (a crash in micro-batch 0 of a new checkpoint only starts that checkpoint afresh).
        code = run_stream_once(bootstrap, topic, table, "1s", 60, crash_at=crash_at, kill_after=kill_after,
                               writer=writer, armed_after=1 if crash_at else 0)
        outcomes.append((f"{crash_at or f'kill@{kill_after:.1f}s'} ({writer})", code))
        attempt += 1
    assert sum(1 for o in outcomes if o[1] != 0) >= kills, outcomes
    return outcomes


def catch_up_stream(bootstrap: str, topic: str, table: Path, writer: str = "spark") -> dict[TopicPartition, int]:
    """Run the stream in large micro-batches with `writer` until the table holds every offset; the end offsets."""
    from kafka_spark.delta import committed_position

    ends = latest_offsets_of(bootstrap, topic)
    for _ in range(5):
        assert run_stream_once(bootstrap, topic, table, "available-now", 0, limit=100_000, writer=writer) == 0
        if committed_position(str(table), STREAM_SINK_ID).offsets == ends:
            break
    return ends


def files_scanned(df) -> int:
    """The files Spark's scan of `df` read, from the executed plan's metrics (after data skipping and partition
    pruning)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    return sum(int(leaves.apply(i).metrics().apply("numFiles").value()) for i in range(leaves.size()))


# The Kafka columns two readers of a table are compared on.
ROW_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def spark_rows(spark, table: Path) -> list[tuple]:
    """The table's Kafka columns as Delta on Spark reads them, sorted."""
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(table)).select(*ROW_COLUMNS).collect())


def delta_rs_rows(table: Path) -> list[tuple]:
    """The table's Kafka columns as delta-rs reads them, sorted, timestamps as Spark shows them."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table(columns=ROW_COLUMNS).to_pylist()
    # Spark's rows hold the session's (UTC) local time, delta-rs's the UTC instant.
    return sorted((*(r[c] for c in ROW_COLUMNS[:-2]), r["timestamp"].replace(tzinfo=None), r["timestampType"])
                  for r in rows)

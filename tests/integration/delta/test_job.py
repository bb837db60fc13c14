"""jobs/kafka_to_delta.py through ./spark-submit.sh: loads, resumes, caps, errors, and the embedded demo."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.local.jars import jar_dir

REPO = Path(__file__).resolve().parents[3]
JOB = REPO / "jobs" / "kafka_to_delta.py"


def run_job(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "spark-submit.sh"), str(JOB), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=400, check=False)


def summary(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The --json summary; spark-submit merges the driver's stderr into stdout, so it is the last JSON line."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout[-3000:]
    return json.loads(lines[-1])


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 10}) as producer:
        futures = [producer.send(topic, f'{{"n":{n}}}'.encode(), key=f"k{n % 17}".encode())
                   for n in range(start, start + count)]
        producer.flush()
        for future in futures:
            future.get()


def latest(bootstrap: str, topic: str) -> dict[str, dict[str, int]]:
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        offsets = client.latest_offsets(client.partitions(topic))
    return {topic: {str(tp.partition): off for tp, off in sorted(offsets.items())}}


def table_rows(table: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return DeltaTable(str(table)).to_pyarrow_table().to_pylist()


def test_capped_load_then_only_new_records(kafka, topic_name: str, tmp_path: Path):
    kafka.tools.create_topic(topic_name, partitions=3)
    produce(kafka.bootstrap, topic_name, 3000)
    table = tmp_path / "table"
    base = ["--bootstrap-servers", kafka.bootstrap, "--topics", topic_name, "--table", str(table), "--json"]

    capped = summary(run_job(*base, "--max-records", "1000"))
    assert capped["status"] == "committed" and capped["batch"] == 0
    assert capped["rows"] == 1000
    assert sum(capped["offsets"][topic_name].values()) == 1000
    assert capped["start"] == {topic_name: {"0": 0, "1": 0, "2": 0}}

    produce(kafka.bootstrap, topic_name, 500, start=3000)
    rest = summary(run_job(*base))
    assert rest["status"] == "committed" and rest["batch"] == 1
    # Exactly the records after the first run's offsets: the 2000 left over and the 500 new ones.
    assert rest["start"] == capped["offsets"]
    assert rest["rows"] == 2500
    assert rest["offsets"] == latest(kafka.bootstrap, topic_name)

    rows = table_rows(table)
    assert len(rows) == 3500
    assert len({(r["partition"], r["offset"]) for r in rows}) == 3500
    assert sorted(json.loads(r["value"])["n"] for r in rows) == list(range(3500))


def test_errors_are_one_line_with_a_non_zero_exit(kafka, topic_name: str, tmp_path: Path):
    bad_flag = run_job("--max-records", "many")
    assert bad_flag.returncode == 2
    assert "kafka-to-delta: error: --max-records: expected a whole number, got 'many'" in bad_flag.stdout

    conf = tmp_path / "job.toml"
    conf.write_text('bootstrap-servers = "127.0.0.1:9"\ntopic = "a"\ntable = "t"\n')
    bad_key = run_job("--config", str(conf))
    assert bad_key.returncode == 2
    assert f"kafka-to-delta: error: {conf}: unknown key 'topic'; did you mean 'topics'?" in bad_key.stdout

    table = tmp_path / "table"
    missing = run_job("-b", kafka.bootstrap, "--topics", topic_name, "--table", str(table))
    assert missing.returncode == 1
    assert f"kafka-to-delta: error: topic '{topic_name}' does not exist in the cluster" in missing.stdout
    assert not (table / "_delta_log").exists()

    for proc in (bad_flag, bad_key, missing):
        assert "Traceback" not in proc.stdout + proc.stderr
        assert len([line for line in proc.stdout.splitlines() if "error" in line.lower()]) == 1, proc.stdout


def test_spark_errors_become_one_line():
    from pyspark.errors import AnalysisException, PythonException

    job = _job_module("kafka_to_delta_errors")
    analysis = AnalysisException(
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nope` cannot be "
        "resolved. Did you mean one of the following? [`key`, `value`]. SQLSTATE: 42703; line 1 pos 7;\n"
        "'Project ['nope]\n+- SubqueryAlias kafka\n")
    assert job.error_line(analysis).startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column")
    worker = PythonException(
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/work/kafka_spark/spark/reader.py", line 90, in read\n'
        "    raise DataLossError(message)\n"
        "kafka_spark.errors.base.DataLossError: t-0: offsets 0..9 were deleted before they were read\n")
    assert job.error_line(worker) == "DataLossError: t-0: offsets 0..9 were deleted before they were read"


def test_embedded_default_seeds_loads_then_is_up_to_date(tmp_path: Path):
    cache = tmp_path / "cache"
    (cache / "jars").mkdir(parents=True)
    # The jars are shared (read-only); the local broker's state lives in this private cache.
    for name in ("kafka4", "kafka39", "spark"):
        (cache / "jars" / name).symlink_to(jar_dir(name))
    env = {**os.environ, "KAFKA_SPARK_CACHE": str(cache)}
    table = tmp_path / "page_views"
    try:
        first = summary(run_job("--table", str(table), "--seed-records", "5000", "--json", env=env))
        assert first["embedded"] is True and first["seeded"] == 5000
        assert first["status"] == "committed" and first["rows"] == 5000
        assert len(first["offsets"]["page_views"]) == 6
        assert sum(first["offsets"]["page_views"].values()) == 5000
        assert first["offsets"] == latest(first["bootstrap"], "page_views")

        rows = table_rows(table)
        assert len(rows) == 5000
        assert set(rows[0]) == {"user", "page", "referrer", "event_time", "duration_ms",
                                "topic", "partition", "offset", "timestamp"}
        assert all(r["user"].startswith("user-") and r["page"].startswith("/") for r in rows)

        second = run_job("--table", str(table), "--seed-records", "5000", env=env)
        assert second.returncode == 0, second.stdout[-3000:]
        assert re.search(r"is up to date \(sink 'default', batch 0\)", second.stdout), second.stdout[-3000:]
        assert "seeding" not in second.stdout
        assert "kafka-spark local stop" in second.stdout
        # spark-submit.sh sets driver logging to WARN before the JVM starts: no INFO start-up lines
        assert " INFO " not in second.stdout + second.stderr, second.stdout[:2000]
    finally:
        subprocess.run([sys.executable, "-m", "kafka_spark.cli.main", "local", "stop"], env=env,
                       capture_output=True, text=True, timeout=120, check=False)


def _job_module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, JOB)
    assert spec and spec.loader
    job = importlib.util.module_from_spec(spec)
    sys.modules[name] = job  # dataclasses look their module up while the class is built
    spec.loader.exec_module(job)
    return job


def test_example_config_documents_every_key():
    job = _job_module("kafka_to_delta_conf")
    path = REPO / "conf" / "kafka-to-delta.toml"
    text = path.read_text()
    examples = dict(re.findall(r"^# ([a-z-]+) = (.*)$", text, flags=re.M))
    assert set(examples) == set(job.FILE_KEYS)
    flags = {a.option_strings[0].removeprefix("--") for a in job.build_parser()._actions if a.option_strings}
    assert set(job.FILE_KEYS) <= flags
    # Each example value, uncommented, is accepted by the job.
    for key, value in examples.items():
        if value != '"""':
            _, parse = job.FILE_KEYS[key]
            parse(tomllib.loads(f"{key} = {value}")[key], key)
    # As shipped, the file sets nothing: it runs the demo.
    assert job.read_config_file(str(path)) == job.JobConfig()


@pytest.mark.parametrize("value", ["1.5", "-3", "true"])
def test_max_records_must_be_a_positive_whole_number(value: str):
    job = _job_module("kafka_to_delta_flags")
    from kafka_spark.errors import ConfigError

    with pytest.raises(ConfigError, match="--max-records"):
        job.parse_config(["--max-records", value])

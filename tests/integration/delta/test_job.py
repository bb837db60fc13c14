"""jobs/kafka_to_delta.py through ./spark-submit.sh: loads, resumes, caps, errors, and the embedded demo."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from delta_support import (
    JOBS,
    check_example_config,
    embedded_env,
    latest,
    produce,
    run_job,
    stop_local_broker,
    summary,
    table_rows,
)

JOB = JOBS / "kafka_to_delta.py"


def test_capped_load_then_only_new_records(kafka, topic_name: str, tmp_path: Path):
    kafka.create_topic(topic_name, partitions=3)
    produce(kafka.bootstrap, topic_name, 3000)
    table = tmp_path / "table"
    base = ["--bootstrap-servers", kafka.bootstrap, "--topics", topic_name, "--table", str(table), "--json"]

    capped = summary(run_job(JOB, *base, "--max-records", "1000"))
    assert capped["status"] == "committed" and capped["batch"] == 0
    assert capped["rows"] == 1000
    assert sum(capped["offsets"][topic_name].values()) == 1000
    assert capped["start"] == {topic_name: {"0": 0, "1": 0, "2": 0}}

    produce(kafka.bootstrap, topic_name, 500, start=3000)
    rest = summary(run_job(JOB, *base))
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
    bad_flag = run_job(JOB, "--max-records", "many")
    assert bad_flag.returncode == 2
    assert "kafka-to-delta: error: --max-records: expected a whole number, got 'many'" in bad_flag.stdout

    conf = tmp_path / "job.toml"
    conf.write_text('bootstrap-servers = "127.0.0.1:9"\ntopic = "a"\ntable = "t"\n')
    bad_key = run_job(JOB, "--config", str(conf))
    assert bad_key.returncode == 2
    assert f"kafka-to-delta: error: {conf}: unknown key 'topic'; did you mean 'topics'?" in bad_key.stdout

    table = tmp_path / "table"
    missing = run_job(JOB, "-b", kafka.bootstrap, "--topics", topic_name, "--table", str(table))
    assert missing.returncode == 1
    assert f"kafka-to-delta: error: topic '{topic_name}' does not exist in the cluster" in missing.stdout
    assert not (table / "_delta_log").exists()

    for proc in (bad_flag, bad_key, missing):
        assert "Traceback" not in proc.stdout + proc.stderr
        assert len([line for line in proc.stdout.splitlines() if "error" in line.lower()]) == 1, proc.stdout


def test_spark_errors_become_one_line():
    from pyspark.errors import AnalysisException, PythonException

    from kafka_spark.app import exits as job

    analysis = AnalysisException(
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nope` cannot be "
        "resolved. Did you mean one of the following? [`key`, `value`]. SQLSTATE: 42703; line 1 pos 7;\n"
        "'Project ['nope]\n+- SubqueryAlias kafka\n")
    assert job.error_line(analysis).startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column")
    worker = PythonException(
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/work/kafka_spark/spark/source/reader.py", line 90, in read\n'
        "    raise DataLossError(message)\n"
        "kafka_spark.errors.base.DataLossError: t-0: offsets 0..9 were deleted before they were read\n")
    assert job.error_line(worker) == "DataLossError: t-0: offsets 0..9 were deleted before they were read"


def test_embedded_default_seeds_loads_then_is_up_to_date(tmp_path: Path):
    env = embedded_env(tmp_path)
    table = tmp_path / "page_views"
    try:
        first = summary(run_job(JOB, "--table", str(table), "--seed-records", "5000", "--json", env=env))
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

        second = run_job(JOB, "--table", str(table), "--seed-records", "5000", env=env)
        assert second.returncode == 0, second.stdout[-3000:]
        assert re.search(r"is up to date \(sink 'default', batch 0\)", second.stdout), second.stdout[-3000:]
        assert "seeding" not in second.stdout
        assert "kafka-spark local stop" in second.stdout
        # spark-submit.sh sets driver logging to WARN before the JVM starts: no INFO start-up lines
        assert " INFO " not in second.stdout + second.stderr, second.stdout[:2000]
    finally:
        stop_local_broker(env)


def test_example_config_documents_every_key():
    from kafka_spark.app import load as job

    check_example_config(job, "kafka-to-delta.toml", job.LoadConfig())


@pytest.mark.parametrize("value", ["1.5", "-3", "true"])
def test_max_records_must_be_a_positive_whole_number(value: str):
    from kafka_spark.app import load as job
    from kafka_spark.errors import ConfigError

    with pytest.raises(ConfigError, match="--max-records"):
        job.read_config(["--max-records", value])


def test_kafka_spark_load_runs_the_same_application_without_spark_submit(kafka, topic_name: str, tmp_path: Path):
    """`kafka-spark load` (here `python -m kafka_spark load`), from a directory that is not a checkout, with the
    vocabulary's names and a --command-config file."""
    import subprocess
    import sys

    kafka.tools.create_topic(topic_name, partitions=2)
    produce(kafka.bootstrap, topic_name, 300)
    props = tmp_path / "client.properties"
    props.write_text("client.id=kafka-spark-load-test\n")
    proc = subprocess.run([sys.executable, "-m", "kafka_spark", "load", "-b", kafka.bootstrap, "--topic", topic_name,
                           "--table", "orders", "--sink-id", "cli", "--command-config", str(props), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=400, check=False)
    run = summary(proc)
    assert run["status"] == "committed" and run["rows"] == 300 and run["sink"] == "cli"
    assert run["table"] == str(tmp_path / "orders")
    assert len(table_rows(tmp_path / "orders")) == 300

"""jobs/stream_to_delta.py as users run it: AvailableNow runs that resume from the table; the embedded demo
through ./spark-submit.sh stopped by a terminal's Ctrl-C after the micro-batch in flight while live records keep
arriving, and at once by a supervisor's SIGTERM followed by a Ctrl-C; one-line errors for bad settings."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from delta_support import (
    JOBS,
    REPO,
    check_example_config,
    delta_offsets,
    embedded_env,
    json_lines,
    latest,
    produce,
    run_job,
    stop_local_broker,
    summary,
    table_rows,
)

JOB = JOBS / "stream_to_delta.py"


def test_available_now_runs_resume_from_the_table_without_their_checkpoint(kafka, topic_name: str,
                                                                                tmp_path: Path):
    kafka.create_topic(topic_name, partitions=3)
    produce(kafka.bootstrap, topic_name, 900)
    table = tmp_path / "events"
    args = ("-b", kafka.bootstrap, "--topics", topic_name, "--table", str(table), "--trigger", "available-now",
            "--max-offsets-per-trigger", "250", "--json")
    first = run_job(JOB, *args)
    lines = json_lines(first.stdout)
    run = summary(first)
    # 900 offsets, at most 250 a trigger (divided between partitions as Spark does, rounding down):
    # four micro-batches, each its own Delta commit and sink batch.
    batches = [line for line in lines if "micro_batch" in line]
    assert [b["batch"] for b in batches] == [0, 1, 2, 3]
    assert all(200 < b["rows"] <= 250 for b in batches[:3]) and sum(b["rows"] for b in batches) == 900
    assert all(b["seconds"] > 0 for b in batches)  # each micro-batch's own write time
    assert run["status"] == "finished" and run["rows"] == 900 and run["micro_batches"] == 4
    assert run["offsets"] == latest(kafka.bootstrap, topic_name)
    assert all(set(b["behind_latest"]) >= {"maxOffsetsBehindLatest"} for b in batches)
    assert batches[-1]["behind_latest"]["maxOffsetsBehindLatest"] == "0"

    # Without its checkpoint the next run starts from the offsets in the table: only new records.
    shutil.rmtree(run["checkpoint"])
    produce(kafka.bootstrap, topic_name, 300, start=900)
    second = summary(run_job(JOB, *args))
    assert second["rows"] == 300 and second["micro_batches"] == 2 and second["batch"] == 5
    assert second["offsets"] == latest(kafka.bootstrap, topic_name)
    rows = table_rows(table)
    assert sorted(json.loads(r["value"])["n"] for r in rows) == list(range(1200))


def test_bad_settings_are_one_line_errors_before_spark_starts(tmp_path: Path):
    for args, message in [
        (["--trigger", "soon"], r"--trigger: trigger 'soon': expected 'available-now', 'once' or an interval"),
        (["--max-trigger-delay", "5m"], r"--max-trigger-delay only applies with --min-offsets-per-trigger"),
        (["--max-offsets-per-trigger", "0"], r"--max-offsets-per-trigger: must be at least 1"),
        (["--min-offsets-per-trigger", "1", "--max-trigger-delay", "soon"],
         r"option '--max-trigger-delay': expected a duration such as"),
        (["--config", str(tmp_path / "none.toml")], r"--config: no such file"),
    ]:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(JOB), *args], cwd=REPO, capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert re.search(r"^stream-to-delta: error: " + message, proc.stderr, re.M), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert time.monotonic() - started < 30


def test_example_config_documents_every_key():
    from kafka_spark.app import stream as job

    check_example_config(job, "stream-to-delta.toml", job.StreamConfig())


@pytest.mark.parametrize("trigger,expected", [("available-now", {"availableNow": True}), ("once", {"once": True}),
                                              ("500ms", {"processingTime": "500 milliseconds"}),
                                              ("1m", {"processingTime": "60000 milliseconds"})])
def test_trigger_settings(trigger: str, expected: dict):
    from kafka_spark.app import stream as job

    config, _ = job.read_config(["--trigger", trigger])
    from kafka_spark.sink.options import trigger_kwargs

    assert trigger_kwargs(config.trigger) == expected


# ---- stops through ./spark-submit.sh, as a terminal and a supervisor send them -------------------------------

_BATCH = re.compile(r"^stream-to-delta: micro-batch \d+: committed batch \d+ .*?, ([\d,]+) rows", re.M)


def _start_demo_stream(tmp_path: Path) -> tuple[subprocess.Popen[str], dict[str, str], Path, list[str]]:
    """The demo stream through ./spark-submit.sh in a session of its own (a terminal's foreground group: the
    script, the JVM and all their children), read until two micro-batches of live records are committed."""
    env = embedded_env(tmp_path)
    table = tmp_path / "page_views"
    cmd = [str(REPO / "spark-submit.sh"), str(JOB), "--table", str(table), "--seed-records", "600",
           "--sample-rate", "40", "--trigger", "1s"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    rows: list[int] = []
    deadline = time.monotonic() + 300
    assert proc.stdout is not None
    while time.monotonic() < deadline and not (len(rows) >= 3 and all(rows[1:3])):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = _BATCH.match(line)
        if found:
            rows.append(int(found.group(1).replace(",", "")))
    assert len(rows) >= 3, "".join(lines)[-3000:]
    return proc, env, table, lines


def _finish(proc: subprocess.Popen[str], lines: list[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=180)
    return "".join(lines) + out, err


def _assert_no_trace(text: str) -> None:
    assert "Traceback" not in text, text[-3000:]
    assert not re.search(r"^\s+at [\w.$]+\(", text, re.M), text[-3000:]  # a Java stack frame
    assert "error:" not in text, text[-3000:]


def _assert_exact(table: Path, env: dict[str, str]) -> int:
    """Every committed offset is a row of the table, once; the number of rows."""
    committed = json.loads(delta_offsets(str(table), "--json", env=env).stdout)["default"]["offsets"]
    rows = table_rows(table)
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows)
    assert len(rows) == sum(committed["page_views"].values())
    return len(rows)


def test_embedded_demo_streams_live_records_and_stops_after_the_micro_batch_in_flight(tmp_path: Path):
    # Ctrl-C in a terminal signals the whole foreground process group: the JVM and the workers must not die of it.
    # The embedded demo: the local broker started, seeded with 600 records, and records produced while it runs.
    proc, env, table, lines = _start_demo_stream(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        asked = time.monotonic()
        out, err = _finish(proc, lines)
        assert proc.returncode == 0, out[-3000:] + err[-3000:]
        # It finishes the micro-batch in flight, not every one that a busy stream starts after it.
        assert time.monotonic() - asked < 60
        assert "stream-to-delta: stopping: letting the micro-batch in flight finish..." in out
        summary_line = re.search(r"^stream-to-delta: stopped after (\d+) committed micro-batches, ([\d,]+) rows",
                                 out, re.M)
        assert summary_line, out[-3000:]
        assert "seeded     600 sample records into topic 'page_views'" in out
        assert "kafka-spark local stop" in out
        _assert_no_trace(out + err)
        # Every committed offset is a row, once: the table and its offsets agree after the stop; the live records
        # are there beside the seeded ones.
        rows = _assert_exact(table, env)
        assert rows == int(summary_line.group(2).replace(",", "")) > 600
        assert {"user", "page", "event_time", "offset"} <= set(table_rows(table)[0])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        stop_local_broker(env)


def test_a_supervisors_sigterm_then_a_ctrl_c_stop_at_once(tmp_path: Path):
    # SIGTERM to the started process only (systemd, Kubernetes) asks for the same stop as a first Ctrl-C; a Ctrl-C
    # after it stops at once.
    proc, env, table, lines = _start_demo_stream(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        assert proc.stdout is not None
        while time.monotonic() < deadline and not any("stopping: letting the micro-batch" in x for x in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        assert any("stream-to-delta: stopping: letting the micro-batch in flight finish..." in x for x in lines), \
            "".join(lines)[-3000:]
        os.killpg(proc.pid, signal.SIGINT)
        asked = time.monotonic()
        out, err = _finish(proc, lines)
        assert proc.returncode == 130, out[-3000:] + err[-3000:]
        assert time.monotonic() - asked < 15
        assert "stream-to-delta: stopped at once; the micro-batch in flight is not committed" in out + err
        _assert_no_trace(out + err)
        _assert_exact(table, env)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        stop_local_broker(env)

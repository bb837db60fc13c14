"""A secure run in a fresh process, for the credentials grep: SASL/SCRAM over TLS with an encrypted client
key given inline, through a `pykafka` batch read (and a user's Delta write of it), a stream into Delta, a
Delta batch load and the kafka-to-delta job (--json), then the same with a wrong password and a wrong key
password. Spark's UI and event log are on.

    secure_run.py SETTINGS_JSON OUT_DIR

SETTINGS_JSON holds `bootstrap`, `topic`, `options` (client properties, secrets included), `wrong` (the same
with a wrong SASL password, or another login that fails), `wrong_key` (a wrong key password; optional),
`stores` (object stores' credentials by Hadoop key, optional: a back-fill from log dirs in those stores is then
planned with them in the session's settings, and a command over its read runs), `registry` (schema registry
settings, optional: with the client properties and the stores' keys, in the reprs of every options class) and
`event_log`. Everything the run shows
goes to OUT_DIR: explain output and plan strings, each error's text, the UI's pages, the streaming progress,
the job's stdout and stderr, the options' reprs (also logged at DEBUG). The tables are OUT_DIR/stream and
OUT_DIR/load.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

from kafka_spark import register
from kafka_spark.app.settings import LoadConfig
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta import load, start_stream
from kafka_spark.delta.log_load import read_files, read_options
from kafka_spark.local.process import free_port
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.spark.log.options import parse_log_options
from kafka_spark.spark.sink.options import parse_sink_options
from kafka_spark.spark.source.options import parse_source_options

JOBS = Path(__file__).resolve().parents[3] / "jobs"


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode("utf-8", "replace")


def read(spark, settings: dict[str, Any], options: dict[str, str]):
    reader = (spark.read.format("pykafka").option("subscribe", settings["topic"])
              .option("startingOffsets", "earliest").option("endingOffsets", "latest"))
    for k, v in options.items():
        reader = reader.option(f"kafka.{k}", v)
    return reader.load()


def explained(df) -> str:
    """Every explain mode's output of `df`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for mode in ("simple", "extended", "codegen", "cost", "formatted"):
            df.explain(mode)
    return out.getvalue()


def store_log_dirs(stores: dict[str, str]) -> list[str]:
    """A log dir in each store whose credentials `stores` holds (the account and bucket its keys name)."""
    account = next(k for k in stores if k.startswith("fs.azure.account.key.")).removeprefix("fs.azure.account.key.")
    bucket = next(k for k in stores if k.startswith("fs.s3a.bucket.")).split(".")[3]
    return [f"abfss://logs@{account}/kafka", f"s3a://{bucket}/kafka", f"gs://{bucket}/kafka"]


def log_load_from_stores(spark, out: Path, topic: str, stores: dict[str, str]) -> None:
    """A back-fill's read of log dirs in object stores, planned with their credentials in the session (an
    account key as `spark.hadoop.*` sets it, the others as a notebook does), which copies them into the read's
    options; its explain output, and a Delta write over it, whose plan Spark records with the read's options
    (the UI, the event log). Limit 0: no task reaches a store."""
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in stores.items():
        if key.startswith("fs.azure.account.key."):
            hadoop.set(key, value)
        else:
            spark.conf.set(key, value)
    options = LoadOptions(table=str(out / "log-load"), log_dirs=store_log_dirs(stores), topics=[topic])
    reading = read_options(spark, options)
    assert set(stores.values()) & set(reading.values()), "no credential was copied into the read"
    tp = TopicPartition(topic, 0)
    df = read_files(spark, options, reading, BatchPlan(batch=0, start={tp: 0}, end={tp: 10}))
    (out / "log_load_explain.txt").write_text(explained(df))
    df.limit(0).write.format("delta").save(str(out / "log-load"))


def options_reprs(out: Path, topic: str, options: dict[str, str], stores: dict[str, str],
                  registry: dict[str, str]) -> None:
    """The repr of every options class holding the run's client properties, registry settings and store keys,
    written out and logged at DEBUG."""
    given = {**{f"kafka.{k}": v for k, v in options.items()}, **{f"schema.registry.{k}": v for k, v in
                                                                  registry.items()}, "valueFormat": "avro"}
    load_options = LoadOptions(table=str(out / "load"), kafka=options, topics=[topic], value_format="avro",
                               schema_registry=registry)
    shown = [load_options, load_options.source, load_options.publishing,
             StreamOptions(table=str(out / "stream"), kafka=options, topics=[topic], schema_registry=registry,
                           value_format="avro"),
             parse_source_options({**given, "subscribe": topic}), parse_sink_options({**given, "topic": topic}),
             parse_log_options({"path": store_log_dirs(stores)[1], "subscribe": topic, **stores, **given}),
             LoadConfig(topics=[topic], kafka=options, registry=registry)]
    (out / "reprs.txt").write_text("\n".join([*map(repr, shown), *map(str, shown)]))
    logging.getLogger("kafka_spark.secure_run").debug("the run's options: %s", shown)


def failure(action) -> str:
    """The text a user sees when `action` fails: the exception and its traceback."""
    try:
        action()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    raise AssertionError("the run with a wrong secret did not fail")


def job(argv: list[str]) -> tuple[int, str, str]:
    """jobs/kafka_to_delta.py's main in this process (it finds this session); exit code, stdout, stderr."""
    sys.path.insert(0, str(JOBS))
    spec = importlib.util.spec_from_file_location("kafka_to_delta_job", JOBS / "kafka_to_delta.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = module.main(argv)
    return code, out.getvalue(), err.getvalue()


_clock = [time.monotonic()]


def step(name: str) -> None:
    """Print how long the step that just ended took."""
    now = time.monotonic()
    print(f"{name}: {now - _clock[0]:.1f}s", flush=True)
    _clock[0] = now


def main() -> None:
    settings = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    ui_port = free_port()
    spark = local_spark("kafka-spark-secrets", extra={
        "spark.ui.enabled": "true", "spark.ui.port": str(ui_port),
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{settings['event_log']}",
        # plain text, so the grep reads what the history server would show
        "spark.eventLog.compress": "false",
        # Spark's default, as in a session made elsewhere: register() must add the secret options
        "spark.sql.redaction.options.regex": "(?i)url",
    })
    register(spark)
    options, topic = settings["options"], settings["topic"]

    # a batch read: its plans, explain output and rows
    df = read(spark, settings, options)
    (out / "rows.txt").write_text(str(df.count()))
    explained = io.StringIO()
    with contextlib.redirect_stdout(explained):
        for mode in ("simple", "extended", "codegen", "cost", "formatted"):
            df.explain(mode)
        df.explain(True)
    (out / "explain.txt").write_text(explained.getvalue())
    qe = df._jdf.queryExecution()
    (out / "plans.txt").write_text("\n".join([qe.toString(), qe.logical().toString(), qe.analyzed().toString(),
                                              qe.optimizedPlan().toString(), qe.executedPlan().toString(),
                                              qe.sparkPlan().toString(), df.schema.simpleString()]))
    # a user's own write of that read: its command's plan prints the read's options as arguments
    df.write.format("delta").save(str(out / "user"))

    step("batch read")
    if "stores" in settings:
        log_load_from_stores(spark, out, topic, settings["stores"])
        options_reprs(out, topic, options, settings["stores"], settings["registry"])
        step("log load plans and reprs")
    # a stream into Delta and a Delta batch load
    stream = start_stream(spark, StreamOptions(table=str(out / "stream"), kafka=options, topics=[topic],
                                               sink_id="secure", starting="earliest", trigger="available-now",
                                               max_offsets_per_trigger=150))
    stream.awaitTermination(300)
    (out / "progress.json").write_text(json.dumps([json.loads(p.json) for p in stream.recentProgress]))
    (out / "stream_explain.txt").write_text(str(stream._jsq.explainInternal(True)))
    stream.stop()
    result = load(spark, LoadOptions(table=str(out / "load"), kafka=options, topics=[topic], sink_id="secure"))
    (out / "load_result.json").write_text(json.dumps(result.summary()))

    step("stream and load")
    # the job, as ./spark-submit.sh jobs/kafka_to_delta.py ... --json would run it
    props = [f"-X{k}={v}" for k, v in options.items() if k != "bootstrap.servers"]
    base = ["--bootstrap-servers", options["bootstrap.servers"], "--topics", topic, "--sink-id", "job"]
    code, stdout, stderr = job([*base, "--table", str(out / "job"), *props, "--json"])
    (out / "job_stdout.txt").write_text(stdout)
    (out / "job_stderr.txt").write_text(stderr)
    assert code == 0 and json.loads(stdout.splitlines()[-1])["status"] == "committed", stdout + stderr

    step("job")
    # the same with a wrong SASL password, and with a wrong key password
    errors = [
        failure(lambda: read(spark, settings, settings["wrong"]).collect()),
        failure(lambda: load(spark, LoadOptions(table=str(out / "wrong"), kafka=settings["wrong"], topics=[topic]))),
    ]
    if "wrong_key" in settings:  # only runs with a client key have one
        errors.append(failure(lambda: read(spark, settings, settings["wrong_key"]).collect()))
    wrong_props = [f"-X{k}={v}" for k, v in settings["wrong"].items() if k != "bootstrap.servers"]
    code, stdout, stderr = job([*base, "--table", str(out / "job-wrong"), *wrong_props, "--json"])
    errors.append(f"exit {code}\n{stdout}\n{stderr}")
    assert code != 0, stdout
    (out / "errors.txt").write_text("\n\n".join(errors))

    step("failing runs")
    # the UI while the session is alive: HTML pages and the REST API
    base_url = spark.sparkContext.uiWebUrl.rstrip("/")
    app = spark.sparkContext.applicationId
    pages = {"sql.html": "/SQL/", "environment.html": "/environment/", "jobs.html": "/jobs/",
             "stages.html": "/stages/", "streaming.html": "/StreamingQuery/",
             "environment.json": f"/api/v1/applications/{app}/environment",
             "sql.json": f"/api/v1/applications/{app}/sql?details=true&planDescription=true&length=1000"}
    ui = out / "ui"
    ui.mkdir()
    for name, path in pages.items():
        (ui / name).write_text(fetch(base_url + path))
    for execution in json.loads((ui / "sql.json").read_text()):
        (ui / f"sql-execution-{execution['id']}.html").write_text(
            fetch(f"{base_url}/SQL/execution/?id={execution['id']}"))
    step("UI pages")
    spark.stop()
    print("secure run done", flush=True)


if __name__ == "__main__":
    main()

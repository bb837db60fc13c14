"""A back-fill from log dirs in object stores copies the session's store settings, credentials included, into its
`pykafka-log` read (Spark's Python workers cannot see Hadoop's settings): no plan, explain output, SQL execution
Spark records (the UI's and the event log's source) or log line shows them.

The credentials are an Azure storage account key, an S3A per-bucket secret key, an ABFS OAuth client secret and
a GCS private key, set in the session's Hadoop configuration and its SQL settings (which Delta's Hadoop
configuration reads too) of a session whose options pattern is Spark's default, as in one made elsewhere."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.log_load import read_files, read_options
from kafka_spark.sink import LoadOptions
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.spark.redaction import OPTIONS_REGEX_CONF, SPARK_DEFAULT_OPTIONS_REGEX

ACCOUNT_HOST = "acct47.dfs.core.windows.net"
AZURE_KEY = f"fs.azure.account.key.{ACCOUNT_HOST}"
S3A_KEY = "fs.s3a.bucket.vault47.secret.key"
OAUTH_KEY = "fs.azure.account.oauth2.client.secret"
GCS_KEY = "fs.gs.auth.service.account.private.key"
# No word Spark's default pattern matches (secret, password, token, access key) in the values: Spark would hide
# every value holding one, whatever its option's name, and the test would see nothing to find.
VALUES = {AZURE_KEY: "QXp1cmUgYWNjb3VudCBrZXkgNDc=", S3A_KEY: "wJalrXUtnFEMI-K7MDENG-bPxRfiCY47",
          OAUTH_KEY: "abfs-oauth-client-Q47~z", GCS_KEY: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-gcs47"}
# The Azure key as Spark would set it at launch (spark.hadoop.*), the others as a notebook sets them.
IN_HADOOP_CONF = (AZURE_KEY,)
LOG_DIRS = [f"abfss://logs@{ACCOUNT_HOST}/kafka", "s3a://vault47/kafka", "gs://vault47/kafka"]


@pytest.fixture
def session(spark) -> Iterator[Any]:
    """A session of `spark` with Spark's default options pattern and the credentials set."""
    session = spark.newSession()
    session.conf.set(OPTIONS_REGEX_CONF, SPARK_DEFAULT_OPTIONS_REGEX)
    hadoop = spark._jsc.hadoopConfiguration()  # shared by every session: unset afterwards
    for key, value in VALUES.items():
        if key in IN_HADOOP_CONF:
            hadoop.set(key, value)
        else:
            session.conf.set(key, value)
    try:
        yield session
    finally:
        for key in IN_HADOOP_CONF:
            hadoop.unset(key)


def explained(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for mode in ("simple", "extended", "codegen", "cost", "formatted"):
            df.explain(mode)
    qe = df._jdf.queryExecution()
    return "\n".join([out.getvalue(), qe.toString(), qe.logical().toString(), qe.analyzed().toString(),
                      qe.optimizedPlan().toString(), qe.executedPlan().toString()])


def recorded_executions(session) -> Iterator[Any]:
    """The SQL executions Spark keeps for its UI and event log (the session's application's)."""
    iterator = session._jsparkSession.sharedState().statusStore().executionsList().iterator()
    while iterator.hasNext():
        yield iterator.next()


def executions(session, after: int) -> list[tuple[str, str]]:
    """(physical plan description, modified settings) of each SQL execution after id `after`."""
    return [(str(e.physicalPlanDescription()), str(e.modifiedConfigs())) for e in recorded_executions(session)
            if e.executionId() > after]


def last_execution_id(session) -> int:
    return max([-1, *(e.executionId() for e in recorded_executions(session))])


def test_the_copied_store_credentials_appear_in_no_plan_execution_or_log(session, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kafka_spark")
    options = LoadOptions(table=str(tmp_path / "table"), log_dirs=LOG_DIRS, topics=["orders"])
    reading = read_options(session, options)
    # The reader reaches the stores with them, so they are copied ...
    assert reading[AZURE_KEY] == VALUES[AZURE_KEY] and reading[S3A_KEY] == VALUES[S3A_KEY]
    tp = TopicPartition("orders", 0)
    plan = BatchPlan(batch=0, start={tp: 0}, end={tp: 10})
    before = last_execution_id(session)
    df = read_files(session, options, reading, plan)
    shown = {"explain and plans": explained(df)}
    # ... and a command over the read prints its options in the plan Spark records (no task runs: limit 0).
    df.limit(0).write.format("delta").save(str(tmp_path / "table"))
    recorded = executions(session, before)
    shown["recorded plans"] = "\n".join(description for description, _ in recorded)
    shown["recorded settings"] = "\n".join(settings for _, settings in recorded)
    shown["log"] = caplog.text
    shown["repr"] = repr(options)

    leaks = [f"{key} in {place}" for place, text in shown.items() for key, value in VALUES.items() if value in text]
    assert not leaks, "\n".join(leaks)
    # each place was looked at: it holds the read, its options, the session's settings
    assert "pykafka-log" in shown["explain and plans"]
    assert f"{AZURE_KEY}=*********(redacted)" in shown["recorded plans"]
    assert f"{S3A_KEY}=*********(redacted)" in shown["recorded plans"]
    assert "path=abfss://logs@" in shown["recorded plans"]  # options that are not secret stay readable
    assert GCS_KEY in shown["recorded settings"] and OAUTH_KEY in shown["recorded settings"]

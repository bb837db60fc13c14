"""KAFKA_SPARK_JVM_QUICK_START: every JVM the package starts compiles with C1 only (Spark's collect garbage on one
thread too), and only when asked."""

from __future__ import annotations

import pytest

from kafka_spark.local.process import QUICK_START_ENV, java_argv, quick_start
from kafka_spark.local.spark import JAVA_OPTIONS, local_spark_configs

C1_ONLY = "-XX:TieredStopAtLevel=1"


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("YES", True), ("0", False), ("", False)])
def test_the_switch_reads_the_usual_spellings(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv(QUICK_START_ENV, value)
    assert quick_start() is on


def test_servers_keep_c2_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUICK_START_ENV, raising=False)
    server = java_argv("cp", "kafka.Kafka", ["server.properties"])
    assert C1_ONLY not in server and "-XX:+UseG1GC" in server
    # tools are short-lived either way
    assert C1_ONLY in java_argv("cp", "kafka.tools.GetOffsetShell", [], short_lived=True)
    monkeypatch.setenv(QUICK_START_ENV, "1")
    server = java_argv("cp", "kafka.Kafka", ["server.properties"])
    assert server.count(C1_ONLY) == 1 and "-XX:+UseG1GC" in server
    assert server.index(C1_ONLY) < server.index("kafka.Kafka")


def test_spark_driver_and_executors_follow_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUICK_START_ENV, raising=False)
    conf = local_spark_configs(jars=False)
    assert C1_ONLY not in conf.get(JAVA_OPTIONS, "") and "spark.executor.extraJavaOptions" not in conf
    monkeypatch.setenv(QUICK_START_ENV, "1")
    conf = local_spark_configs(jars=False)
    assert C1_ONLY in conf[JAVA_OPTIONS].split() and "-XX:+UseSerialGC" in conf[JAVA_OPTIONS].split()
    assert conf["spark.executor.extraJavaOptions"] == f"{C1_ONLY} -XX:+UseSerialGC"

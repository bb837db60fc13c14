"""Kafka's tools write their class archive once and start from it afterwards; a damaged one is never used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_spark.local import class_archive
from kafka_spark.local.jars import classpath, jar_dir
from kafka_spark.local.tools import KafkaTools

TOPICS = "org.apache.kafka.tools.TopicCommand"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of its own (the jars shared), so that this test sees the archives from their start."""
    cache = tmp_path / "cache"
    (cache / "jars").mkdir(parents=True)
    (cache / "jars" / jar_dir("kafka4").name).symlink_to(jar_dir("kafka4"))
    monkeypatch.setenv("KAFKA_SPARK_CACHE", str(cache))
    return cache


def settle(folder: Path) -> list[Path]:
    partials = sorted(folder.glob("*.partial"))
    for partial in partials:
        old = partial.stat().st_mtime - 120
        os.utime(partial, (old, old))
    return partials


def test_a_tool_writes_its_archive_and_the_next_starts_use_it(kafka, cache: Path, topic_name: str) -> None:
    kafka.create_topic(topic_name)
    tools = KafkaTools("kafka4", kafka.bootstrap)
    first = tools.run("topics", "--list").stdout
    (partial,) = settle(cache / "jvm")
    archive = class_archive.jvm_archive_path(classpath("kafka4"), TOPICS)
    assert archive is not None and partial.name.startswith(archive.name)
    second = tools.run("topics", "--list").stdout  # adopts the checked partial, then starts from it
    assert archive.is_file() and not list((cache / "jvm").glob("*.partial"))
    assert topic_name in first.split() and first == second  # nothing of the archive reaches the output


def test_a_damaged_archive_is_dropped_and_the_tool_still_runs(kafka, cache: Path, topic_name: str) -> None:
    kafka.create_topic(topic_name)
    tools = KafkaTools("kafka4", kafka.bootstrap)
    tools.run("topics", "--list")
    (partial,) = settle(cache / "jvm")
    partial.write_bytes(partial.read_bytes()[:4096])  # as if the JVM died while writing it
    settle(cache / "jvm")
    # the checking JVM crashes on it, not the tool: the tool runs, writing a new partial
    assert topic_name in tools.run("topics", "--list").stdout.split()
    assert not partial.exists() and not list(Path.cwd().glob("hs_err_pid*.log"))
    archive = class_archive.jvm_archive_path(classpath("kafka4"), TOPICS)
    assert archive is not None and not archive.exists()

"""A local session's stream source processes come forked from its runner zygote (kafka_spark/local/runner_zygote.py),
behave as the process Spark starts itself (rows, errors, stop), and a stream still runs when the zygote is gone."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from kafka_spark.client import Producer
from kafka_spark.local.runner_client import ZYGOTE_ENV

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _zygote_pid() -> int:
    """The zygote serving this process's session: the process whose command line names its socket."""
    path = os.environ[ZYGOTE_ENV]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if path.encode() in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError(f"no zygote serves {path}")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def _stream(spark, kafka, topic: str, **options: str):
    return (spark.readStream.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").options(**options).load())


def test_a_streams_source_process_is_forked_warm_and_ends_with_the_query(spark, kafka, topic_name):
    kafka.create_topic(topic_name, partitions=2)
    with Producer({"bootstrap.servers": kafka.bootstrap}) as producer:
        for i in range(20):
            producer.send(topic_name, value=f"v{i}".encode(), partition=i % 2)
        producer.flush()
    zygote = _zygote_pid()
    before = _children(zygote)
    seen: list[int] = []
    query = (_stream(spark, kafka, topic_name).selectExpr("CAST(value AS STRING) AS v").writeStream
             .format("memory").queryName("zygote_rows").trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (spark.table("zygote_rows").count() == 20 and seen):
            seen = sorted(_children(zygote) - before)
            time.sleep(0.2)
        assert len(seen) == 1, f"the query's source process is not the zygote's child: {seen}"
        assert sorted(r.v for r in spark.table("zygote_rows").collect()) == sorted(f"v{i}" for i in range(20))
    finally:
        query.stop()
    deadline = time.monotonic() + 10
    while _children(zygote) & set(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children(zygote) & set(seen), "the source process outlived its query"


def test_a_source_error_reaches_the_query_from_a_forked_process(spark, kafka):
    query = _stream(spark, kafka, "no-such-topic-zygote").writeStream.format("noop").start()
    with pytest.raises(Exception, match="does not exist"):
        query.awaitTermination(60)


def test_without_the_zygote_a_stream_starts_its_own_process(spark, kafka, topic_name):
    kafka.create_topic(topic_name, partitions=1)
    with Producer({"bootstrap.servers": kafka.bootstrap}) as producer:
        producer.send(topic_name, value=b"x", partition=0)
        producer.flush()
    zygote = _zygote_pid()
    os.kill(zygote, signal.SIGKILL)
    try:
        query = (_stream(spark, kafka, topic_name).writeStream.format("memory").queryName("zygote_gone")
                 .trigger(availableNow=True).start())
        query.awaitTermination(60)
        assert query.exception() is None
        assert spark.table("zygote_gone").count() == 1
    finally:
        # the session's next streams get a zygote again (a stale socket left behind is replaced)
        from kafka_spark.local.runner_zygote import start_zygote

        path = Path(os.environ.pop(ZYGOTE_ENV))
        assert start_zygote(path.parent, sys.executable) == str(path)

"""Fixtures of the Spark integration tests: a Spark standalone cluster whose executors are separate processes,
and a Kafka broker whose log dir the pykafka-log proofs read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A master and two 1-core workers on 127.0.0.1, running this interpreter for Python workers."""
    from harness.standalone import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def log_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A single-node Kafka 4.1 (PLAINTEXT) for the pykafka-log proofs, whose log dir the tests stop, copy and
    watch: retention runs every 500 ms and deleted files go within a second (static broker settings),
    high watermarks and log starts are checkpointed every 500 ms, the cleaner looks every 200 ms."""
    from kafka_spark.local import start_kafka

    node = start_kafka(tmp_path_factory.mktemp("log-broker"), secure=False, extra={
        "log.retention.check.interval.ms": 500, "log.segment.delete.delay.ms": 1000,
        "replica.high.watermark.checkpoint.interval.ms": 500,
        "log.flush.start.offset.checkpoint.interval.ms": 500, "log.cleaner.backoff.ms": 200,
    })
    yield node
    node.stop()

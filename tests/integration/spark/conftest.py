"""Fixtures of the Spark integration tests: a Spark standalone cluster whose executors are separate processes,
a Kafka broker whose log dir the pykafka-log proofs read, and the pairs of streams (ours beside Spark's) that the
stream tests compare (stream_pairs.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from kafka.admin import KafkaAdminClient
from stream_pairs import FORMATS, Run

from kafka_spark.client import Producer


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


@pytest.fixture(scope="module")
def admin(kafka) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def producer(kafka) -> Iterator[Producer]:
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0}) as p:
        yield p


@pytest.fixture
def runs(spark, kafka, tmp_path) -> Iterator[Callable[..., tuple[Run, Run]]]:
    """`runs(**options)` makes (ours, theirs) with fresh checkpoints; every query is stopped at the end."""
    made: list[Run] = []

    def make(**options: str) -> tuple[Run, Run]:
        pair = tuple(Run(spark, kafka, fmt, tmp_path / f"{fmt}-{len(made)}", dict(options)) for fmt in FORMATS)
        made.extend(pair)
        return pair  # type: ignore[return-value]

    yield make
    for run in made:
        if run.query is not None:
            with contextlib.suppress(Exception):  # a failed query may refuse; the test reported it
                run.query.stop()

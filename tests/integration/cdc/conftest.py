"""Fixtures of the change-data-capture proofs: a PostgreSQL server with logical decoding, and Kafka Connect workers
running Debezium's PostgreSQL connector against it, on the suite's broker (tests/harness/postgres.py,
tests/harness/kafka_connect.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

# The workload beside this file, importable under any import mode.
_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A PostgreSQL server (wal_level=logical) with the database `inventory`, for the module's tests."""
    from harness.postgres import start_postgres

    server = start_postgres(tmp_path_factory.mktemp("postgres"))
    yield server
    server.stop()


@pytest.fixture
def connect_worker(kafka, tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Starts a standalone Kafka Connect worker on the suite's broker with the given connectors (name ->
    settings), and its converters and class path when they are not Kafka's JsonConverter on connect.xml's; every
    worker it started is stopped after the test."""
    from harness.kafka_connect import KafkaConnect

    started: list[KafkaConnect] = []

    def start(connectors: Mapping[str, Mapping[str, object]], converters: Mapping[str, object] | None = None,
              classpath: str | None = None) -> KafkaConnect:
        worker = KafkaConnect(kafka.bootstrap, connectors, tmp_path / f"connect-{len(started)}",
                              converters=converters, classpath=classpath)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """An Apicurio Registry, started but not waited for: it comes up while the broker and PostgreSQL do (`wait()`
    before its first use)."""
    from harness.apicurio import ApicurioRegistry

    with ApicurioRegistry(tmp_path_factory.mktemp("apicurio")) as server:
        yield server.begin()

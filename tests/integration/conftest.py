"""Shared by the integration tests: our producer on the single-node broker; for the proofs on broker-written
files (records, segments, pykafka-log), Kafka's Java producer, compiled once for the session, and the helpers
beside it made importable."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_spark.client.producer.producer import Producer

_HERE = Path(__file__).parent
# ProduceRecords.java and its runner live with the record-format proofs; the broker-file helpers here.
for helper_dir in (_HERE, _HERE / "records"):
    if str(helper_dir) not in sys.path:
        sys.path.insert(0, str(helper_dir))


@pytest.fixture(scope="session")
def producer_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProduceRecords.java compiled once for the session (javac against the Kafka 4 client)."""
    from java_producer import compile_producer

    return compile_producer(tmp_path_factory.mktemp("produce-records"))


@pytest.fixture
def producer(kafka) -> Iterator[Producer]:
    """Our producer on the single-node broker."""
    p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    yield p
    p.close()

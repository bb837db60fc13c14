"""Shared by the integration tests: our producer on the single-node broker; for the proofs on broker-written
files (records, segments, pykafka-log), Kafka's Java producer, compiled once for the session, and the helpers
beside it made importable."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_spark.client.producer.producer import Producer

_HERE = Path(__file__).parent
# ProduceRecords.java and its runner live with the record-format proofs; the broker-file helpers here; the
# environments with other PySparks with the compat tests; the pairs of streams with the Spark tests.
for helper_dir in (_HERE, _HERE / "records", _HERE / "compat", _HERE / "spark"):
    if str(helper_dir) not in sys.path:
        sys.path.insert(0, str(helper_dir))


@pytest.fixture(scope="session")
def producer_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProduceRecords.java compiled once for the session (javac against the Kafka 4 client)."""
    from java_producer import compile_producer

    return compile_producer(tmp_path_factory.mktemp("produce-records"))


@pytest.fixture(scope="session")
def pyspark_envs() -> Callable[..., Path]:
    """`spark_envs.spark_env`: the Python of a cached environment with another PySpark. Its tests share one
    scheduling group (tests/scheduling.py): each call uninstalls the package from the environment, which must not
    happen while another test runs there, and two workers building one environment would remove each other's."""
    from spark_envs import spark_env

    return spark_env


@pytest.fixture
def producer(kafka) -> Iterator[Producer]:
    """Our producer on the single-node broker."""
    p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    yield p
    p.close()

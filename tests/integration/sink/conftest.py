"""Fixtures of the sink core's tests; also makes `parquet_log_format` importable under any import mode."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_spark.client.producer.producer import Producer

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def producer(kafka) -> Iterator[Producer]:
    p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    yield p
    p.close()

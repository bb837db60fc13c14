"""Fixtures shared by the Delta sink tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafka_spark.client.producer import Producer


@pytest.fixture
def producer(kafka) -> Iterator[Producer]:
    """Our producer on the single-node broker."""
    p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    yield p
    p.close()

"""Fixtures of the Spark integration tests: a Spark standalone cluster whose executors are separate processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A master and two 1-core workers on 127.0.0.1, running this interpreter for Python workers."""
    from kafka_spark.local.standalone import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1).start()
    yield cluster
    cluster.stop()

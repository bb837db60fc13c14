"""Fixtures of the ZooKeeper tests: a 3-node ensemble with a Kafka 3.9 broker in it; makes `zk_support`
importable under any import mode."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="session")
def ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Three ZooKeeper servers forming one ensemble."""
    from harness.zookeeper import ZooKeeperEnsemble

    zk = ZooKeeperEnsemble(3, tmp_path_factory.mktemp("zk-ensemble")).start()
    yield zk
    zk.stop()


@pytest.fixture(scope="session")
def ensemble_kafka(ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A Kafka 3.9 broker registered in the ensemble under the chroot /ensemble."""
    from harness.kafka39 import Kafka39Broker

    broker = Kafka39Broker(ensemble, tmp_path_factory.mktemp("kafka39-ensemble"), zk_root="/ensemble").start()
    yield broker
    broker.stop()

"""Shared by the proofs on broker-written files (records, segments, pykafka-log): Kafka's Java producer,
compiled once for the session, and the helpers beside it made importable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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

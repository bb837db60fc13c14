"""Shared by the segment-file proofs: Kafka's Java producer (from the records proofs) and log-dir copies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
# ProduceRecords.java and its runner live with the record-format proofs; one producer serves both.
for helper_dir in (_HERE, _HERE.parent / "records"):
    if str(helper_dir) not in sys.path:
        sys.path.insert(0, str(helper_dir))

pytest.register_assert_rewrite("dump_compare")


@pytest.fixture(scope="session")
def producer_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProduceRecords.java compiled once for the session."""
    from java_producer import compile_producer

    return compile_producer(tmp_path_factory.mktemp("produce-records"))

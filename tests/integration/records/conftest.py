"""Shared by the segment proofs: importable helper modules and one compile of the Java producer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# the helpers check with plain asserts; rewrite them so a failure shows the values involved
pytest.register_assert_rewrite("segment_oracle", "dumplog")

if TYPE_CHECKING:
    from segment_oracle import Case, Written


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Each proof module names its cases in CASES; a test that takes `case` runs once per case.
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", list(metafunc.module.CASES), indirect=True)


@pytest.fixture(scope="session")
def producer_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProduceRecords.java compiled once for the session (javac against the Kafka 4 client)."""
    from java_producer import compile_producer

    return compile_producer(tmp_path_factory.mktemp("produce-records"))


@pytest.fixture
def case(request: pytest.FixtureRequest, written: Written) -> Case:
    """One of the module's CASES: its name, partition and the records sent to it (`written` is the module's)."""
    return (request.param, *written[request.param])

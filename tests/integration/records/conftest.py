"""Shared by the segment proofs: importable helper modules (the Java producer: ../conftest.py)."""

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


@pytest.fixture
def case(request: pytest.FixtureRequest, written: Written) -> Case:
    """One of the module's CASES: its name, partition and the records sent to it (`written` is the module's)."""
    return (request.param, *written[request.param])

"""Fixtures of the Iceberg sink tests; also makes `iceberg_support` importable under any import mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)



@pytest.fixture
def catalog(tmp_path):
    """The embedded catalog (SQLite) of one test, its warehouse under tmp_path."""
    from kafka_spark.iceberg import IcebergCatalog

    return IcebergCatalog(warehouse=str(tmp_path / "warehouse"))

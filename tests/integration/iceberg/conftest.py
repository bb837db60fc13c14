"""Fixtures of the Iceberg sink tests; also makes their helpers importable under any import mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# iceberg_support here, and the Delta tests' kill harness (delta_support), under any import mode.
for _helpers in (Path(__file__).parent, Path(__file__).parents[1] / "delta"):
    if str(_helpers) not in sys.path:
        sys.path.insert(0, str(_helpers))



@pytest.fixture
def catalog(tmp_path):
    """The embedded catalog (SQLite) of one test, its warehouse under tmp_path."""
    from kafka_spark.iceberg import IcebergCatalog

    return IcebergCatalog(warehouse=str(tmp_path / "warehouse"))


@pytest.fixture(scope="session")
def iceberg_rest(s3, tmp_path_factory):
    """Apache Iceberg's REST catalog server (tests/harness/iceberg_rest.py): a JDBC catalog on SQLite behind the
    REST API, its tables' files on the `s3` server under s3://lake/iceberg-rest."""
    from harness.iceberg_rest import start_iceberg_rest

    server = start_iceberg_rest(s3.url("iceberg-rest", scheme="s3"), s3, tmp_path_factory.mktemp("iceberg-rest"))
    yield server
    server.stop()

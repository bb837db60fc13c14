"""Fixtures of the payload-format tests: a schema registry (the harness's own server, in this process) and
Confluent's registry client pointed at it, the independent oracle that registers schemas and frames records."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# registry_records here, and the Delta tests' kill harness (delta_support, stream_once), under any import mode.
for _helpers in (Path(__file__).parent, Path(__file__).parents[1] / "delta"):
    if str(_helpers) not in sys.path:
        sys.path.insert(0, str(_helpers))


@pytest.fixture(scope="session")
def registry() -> Iterator[Any]:
    """A Confluent-compatible schema registry on 127.0.0.1, for the whole session."""
    from harness.schema_registry import RegistryServer

    with RegistryServer() as server:
        yield server


@pytest.fixture
def confluent_registry(registry) -> Any:
    """Confluent's own registry client, talking to `registry`."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": registry.url})

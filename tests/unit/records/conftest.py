"""Fixtures for the record tests; also makes `records_support` importable under any import mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafka_spark.records.decoder import Decoder

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def vectorised_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if decode_to_arrow falls back to the record-by-record reader."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the vectorised decoder rejected valid input")

    monkeypatch.setattr(Decoder, "_slow", refuse)

"""A PySpark without Python stream admission control gets a one-line error naming the version needed."""

from __future__ import annotations

import sys

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.batch import KafkaDataSource

OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def test_stream_reader_on_an_older_pyspark_names_the_version(monkeypatch):
    # What an older PySpark looks like to the reader module: its streaming ReadLimit API cannot be imported.
    monkeypatch.setitem(sys.modules, "kafka_spark.spark.stream", None)
    with pytest.raises(ConfigError, match=r"needs PySpark 4\.2 or newer"):
        KafkaDataSource(OPTIONS).streamReader(None)


def test_stream_reader_is_built_with_stream_defaults():
    reader = KafkaDataSource(OPTIONS).streamReader(None)
    assert reader.options.starting.kind == "latest"

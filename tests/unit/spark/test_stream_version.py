"""A PySpark without Python stream admission control gets a one-line error naming the version needed."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.datasource import KafkaDataSource

OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def test_stream_reader_on_an_older_pyspark_names_the_version(monkeypatch):
    # The version is checked before the reader module (which imports 4.2's ReadLimit API) is imported;
    # tests/integration/compat runs this on a real PySpark 4.1.
    monkeypatch.setattr("kafka_spark.spark.versions.pyspark_version", lambda: "4.1.4")
    with pytest.raises(ConfigError, match=r"needs PySpark 4\.2 or newer; this is PySpark 4\.1\.4$"):
        KafkaDataSource(OPTIONS).streamReader(None)


def test_stream_writer_on_an_older_pyspark_names_the_version(monkeypatch):
    monkeypatch.setattr("kafka_spark.spark.versions.pyspark_version", lambda: "4.0.1")
    with pytest.raises(ConfigError, match=r"needs PySpark 4\.1 or newer; this is PySpark 4\.0\.1$"):
        KafkaDataSource(OPTIONS).streamWriter(None, False)


def test_stream_reader_is_built_with_stream_defaults():
    reader = KafkaDataSource(OPTIONS).streamReader(None)
    assert reader.options.starting.kind == "latest"

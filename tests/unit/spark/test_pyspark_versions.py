"""Features that need a newer PySpark than the installed one fail with one line naming the release."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.spark.versions import STREAM_READ, STREAM_WRITE, PySparkVersionError, require_pyspark


def test_older_pyspark_is_named_in_one_line() -> None:
    with pytest.raises(PySparkVersionError) as caught:
        require_pyspark("readStream.format('pykafka')", STREAM_READ, "4.1.4")
    assert str(caught.value) == "readStream.format('pykafka') needs PySpark 4.2 or newer; this is PySpark 4.1.4"
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("version", ["4.2.0", "4.2.1", "4.3.0", "4.10.0.dev1"])
def test_new_enough_pyspark_passes(version: str) -> None:
    require_pyspark("readStream.format('pykafka')", STREAM_READ, version)
    require_pyspark("writeStream.format('pykafka')", STREAM_WRITE, version)


def test_stream_writer_needs_4_1() -> None:
    require_pyspark("writeStream.format('pykafka')", STREAM_WRITE, "4.1.0")
    with pytest.raises(PySparkVersionError, match=r"needs PySpark 4\.1 or newer; this is PySpark 4\.0\.2"):
        require_pyspark("writeStream.format('pykafka')", STREAM_WRITE, "4.0.2")

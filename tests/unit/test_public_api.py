"""The public API is exactly what kafka_spark exports; importing it does not import Spark."""

from __future__ import annotations

import subprocess
import sys

import kafka_spark

PUBLIC = [
    "AuthenticationError", "BatchAlreadyCommittedError", "BrokerError", "ClientConfig", "ConcurrentWriterError",
    "ConfigError", "CorruptRecordError", "DataLossError", "DecodeError", "KafkaClient", "KafkaConnectionError",
    "KafkaDataSource", "KafkaSparkError", "LoadOptions", "LoadResult", "OffsetRange", "OffsetsMovedBackwardsError",
    "Producer", "TopicPartition", "__version__", "committed_position", "committed_positions", "decode_to_arrow",
    "kafka_schema", "load", "register",
]


def test_exports_are_pinned_and_resolve():
    assert sorted(kafka_spark.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(kafka_spark, name) is not None


def test_importing_the_package_does_not_import_pyspark():
    code = "import sys, kafka_spark; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

"""The public API is exactly what kafka_spark exports; importing it does not import Spark."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kafka_spark

PUBLIC = [
    "AuthenticationError", "BadRecordError", "BatchAlreadyCommittedError", "BrokerError", "CheckpointMismatchError",
    "ClientConfig", "ConcurrentWriterError",
    "ConfigError", "CorruptRecordError", "DataLossError", "DecodeError", "KafkaClient", "KafkaConnectionError",
    "KafkaDataSource", "KafkaLogDataSource", "KafkaSparkError", "LoadOptions", "LoadResult", "MultiLoadResult",
    "OffsetRange", "OffsetsMovedBackwardsError",
    "Producer", "Routing", "Split", "StreamOptions", "TableCommitError", "TableSettings", "TopicPartition",
    "__version__",
    "committed_position", "committed_positions",
    "decode_to_arrow", "kafka_schema", "load", "load_tables", "offsets_behind_latest", "register", "start_stream",
]


def test_exports_are_pinned_and_resolve():
    assert sorted(kafka_spark.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(kafka_spark, name) is not None


def test_importing_the_package_does_not_import_pyspark():
    code = "import sys, kafka_spark; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_data_source_module_imports_only_what_planning_needs() -> None:
    # Spark imports this module in every planning worker: the fetch path and the decoder stay out.
    code = ("import sys, pyspark_kafka_spark; "
            "print(sorted(m for m in ('kafka_spark.client.fetch.fetcher', 'kafka_spark.records.decoder', "
            "'kafka_spark.client.producer.producer') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_client_names_resolve_and_unknown_ones_fail() -> None:
    import kafka_spark.client as client

    assert set(client.__all__) <= set(dir(client))
    assert all(getattr(client, name) is not None for name in client.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = client.Nope

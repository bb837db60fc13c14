"""kafka-spark: Spark-native Kafka ingestion in pure Python.

The public API is what this module exports; everything else is internal. Names are loaded on first
use, so `import kafka_spark` stays cheap and does not start or import Spark.
"""

from __future__ import annotations

from kafka_spark.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    # errors
    "KafkaSparkError": "kafka_spark.errors",
    "ConfigError": "kafka_spark.errors",
    "DecodeError": "kafka_spark.errors",
    "CorruptRecordError": "kafka_spark.errors",
    "DataLossError": "kafka_spark.errors",
    "AuthenticationError": "kafka_spark.errors",
    "KafkaConnectionError": "kafka_spark.errors",
    "BrokerError": "kafka_spark.errors",
    # client
    "ClientConfig": "kafka_spark.client",
    "KafkaClient": "kafka_spark.client",
    "Producer": "kafka_spark.client",
    # records
    "decode_to_arrow": "kafka_spark.records",
    "kafka_schema": "kafka_spark.records",
    # offsets
    "OffsetRange": "kafka_spark.offsets",
    "TopicPartition": "kafka_spark.offsets",
    # spark
    "KafkaDataSource": "kafka_spark.spark.datasource",
    "KafkaLogDataSource": "kafka_spark.spark.log.source",
    "register": "kafka_spark.spark.register",
    "offsets_behind_latest": "kafka_spark.spark.source.progress",
    # the sink (any table format) and Delta, its table format
    "LoadOptions": "kafka_spark.sink",
    "LoadResult": "kafka_spark.sink",
    "load": "kafka_spark.delta",
    "StreamOptions": "kafka_spark.sink",
    "start_stream": "kafka_spark.delta",
    "CheckpointMismatchError": "kafka_spark.sink",
    "committed_position": "kafka_spark.delta",
    "committed_positions": "kafka_spark.delta",
    "ConcurrentWriterError": "kafka_spark.sink",
    "BatchAlreadyCommittedError": "kafka_spark.sink",
    "OffsetsMovedBackwardsError": "kafka_spark.sink",
    "BadRecordError": "kafka_spark.sink",
    "Routing": "kafka_spark.sink",
    "Split": "kafka_spark.sink",
    "TableSettings": "kafka_spark.sink",
    "MultiLoadResult": "kafka_spark.sink",
    "TableCommitError": "kafka_spark.sink",
    "load_tables": "kafka_spark.delta",
}

__all__ = sorted([*_EXPORTS, "__version__"])

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

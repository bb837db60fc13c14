"""Real local servers for demos and notebooks: Kafka 4 in KRaft mode (`kafka-spark local start`) and a local
SparkSession with Delta Lake, Spark's Kafka connector and s3a://.

Everything binds to 127.0.0.1 on free ports with a fresh data directory, and is stopped by its owner.
Names are loaded on first use: Spark's Python worker daemon imports `kafka_spark.local.pyspark_worker_daemon`, and
should not pay for the servers' modules.
"""

from __future__ import annotations

from kafka_spark.lazy import lazy_exports

_EXPORTS = {
    "cache_dir": "kafka_spark.local.jars",
    "classpath": "kafka_spark.local.jars",
    "ensure_jars": "kafka_spark.local.jars",
    "spark_jars": "kafka_spark.local.jars",
    "KafkaNode": "kafka_spark.local.kafka",
    "start_kafka": "kafka_spark.local.kafka",
    "KafkaTools": "kafka_spark.local.tools",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

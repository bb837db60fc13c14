"""Auto-registration hook of `pykafka-log`: Spark registers `DefaultSource` of every importable `pyspark_*`
module, one per module (`pyspark_kafka_spark` holds `pykafka`).

Keep this import light and free of optional extras: if it fails, Spark silently skips it.
"""

from kafka_spark.spark.log.source import KafkaLogDataSource as DefaultSource

__all__ = ["DefaultSource"]

"""Auto-registration hook: Spark registers `DefaultSource` of every importable `pyspark_*` module.

Keep this import light and free of optional extras: if it fails, Spark silently skips it.
"""

from kafka_spark.spark.datasource import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]

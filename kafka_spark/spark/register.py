"""Explicit registration, for sessions where Spark's automatic `pyspark_*` lookup is off or unavailable."""

from __future__ import annotations


def register(spark) -> None:
    """Register the `pykafka` and `pykafka-log` data sources on `spark` (a SparkSession)."""
    from kafka_spark.spark.batch import KafkaDataSource
    from kafka_spark.spark.log_source import KafkaLogDataSource

    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(KafkaLogDataSource)

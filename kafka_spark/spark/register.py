"""Explicit registration, for sessions where Spark's automatic `pyspark_*` lookup is off or unavailable."""

from __future__ import annotations


def register(spark) -> None:
    """Register the `pykafka` data source on `spark` (a SparkSession)."""
    from kafka_spark.spark.batch import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)

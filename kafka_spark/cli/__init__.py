"""The `kafka-spark` command line."""

from kafka_spark.cli.main import main

__all__ = ["main"]

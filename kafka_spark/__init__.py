"""kafka-spark: Spark-native Kafka ingestion in pure Python."""

from kafka_spark.errors import KafkaSparkError

__version__ = "0.1.0"

__all__ = ["KafkaSparkError", "__version__"]

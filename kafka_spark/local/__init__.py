"""Real local servers for demos, notebooks and tests: Kafka (KRaft and ZooKeeper mode), ZooKeeper, S3, Spark.

Everything binds to 127.0.0.1 on free ports with a fresh data directory, and is stopped by its owner.
"""

from kafka_spark.local.cluster import KafkaCluster
from kafka_spark.local.jars import cache_dir, classpath, ensure_jars, spark_jars
from kafka_spark.local.kafka import KafkaNode, start_kafka
from kafka_spark.local.kafka39 import Kafka39Broker, start_kafka39
from kafka_spark.local.s3 import S3Server, start_s3
from kafka_spark.local.tools import KafkaTools
from kafka_spark.local.zookeeper import ZooKeeperEnsemble, ZooKeeperServer

__all__ = [
    "Kafka39Broker",
    "KafkaCluster",
    "KafkaNode",
    "KafkaTools",
    "S3Server",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
    "cache_dir",
    "classpath",
    "ensure_jars",
    "spark_jars",
    "start_kafka",
    "start_kafka39",
    "start_s3",
]

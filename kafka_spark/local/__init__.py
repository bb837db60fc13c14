"""Real local servers for demos, notebooks and tests: Kafka (KRaft and ZooKeeper mode), ZooKeeper, Spark, an OAuth 2
server for OAUTHBEARER and an MIT Kerberos KDC.

Everything binds to 127.0.0.1 on free ports with a fresh data directory, and is stopped by its owner.
Names are loaded on first use: Spark's Python worker daemon imports `kafka_spark.local.python_daemon`, and
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
    "Kafka39Broker": "kafka_spark.local.kafka39",
    "start_kafka39": "kafka_spark.local.kafka39",
    "OAuthServer": "kafka_spark.local.oauth_server",
    "start_oauth_server": "kafka_spark.local.oauth_server",
    "start_oauth_kafka": "kafka_spark.local.oauth_kafka",
    "KafkaTools": "kafka_spark.local.tools",
    "Kdc": "kafka_spark.local.kdc",
    "start_kdc": "kafka_spark.local.kdc",
    "start_kerberos_kafka": "kafka_spark.local.kerberos_kafka",
    "ZooKeeperEnsemble": "kafka_spark.local.zookeeper",
    "ZooKeeperServer": "kafka_spark.local.zookeeper",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

"""The only network layer to Kafka: the configuration (config.py), the cluster with its metadata and retries
(cluster.py, metadata.py), `KafkaClient`, topics; by role: net/ (connections, TLS, retries), auth/ (SASL
mechanisms and their logins), fetch/ (reads, ListOffsets), groups/ (consumer groups), producer/ (batches, the
sender, idempotence, transactions).

Names are loaded on first use: a module that needs one part of the client (the Spark data
source's planning worker needs only metadata types) does not import all of it.
"""

from __future__ import annotations

from kafka_spark.lazy import lazy_exports

_EXPORTS = {
    "Cluster": "kafka_spark.client.cluster",
    "ClientConfig": "kafka_spark.client.config",
    "load_properties": "kafka_spark.client.config",
    "BrokerConnection": "kafka_spark.client.net.connection",
    "BootstrapUnreachableError": "kafka_spark.client.errors",
    "ConnectionClosedError": "kafka_spark.client.errors",
    "FetchTimeoutError": "kafka_spark.client.errors",
    "NoBrokersAvailableError": "kafka_spark.client.errors",
    "OffsetOutOfRangeDataLoss": "kafka_spark.client.errors",
    "ProducerError": "kafka_spark.client.errors",
    "RequestTimeoutError": "kafka_spark.client.errors",
    "RetriesExhaustedError": "kafka_spark.client.errors",
    "TopicNotReadyError": "kafka_spark.client.errors",
    "UnknownTopicError": "kafka_spark.client.errors",
    "FetchStats": "kafka_spark.client.fetch.fetcher",
    "RangeReader": "kafka_spark.client.fetch.fetcher",
    "fetch_range": "kafka_spark.client.fetch.fetcher",
    "CommittedOffset": "kafka_spark.client.groups.admin",
    "GroupAdmin": "kafka_spark.client.groups.admin",
    "GroupDescription": "kafka_spark.client.groups.admin",
    "GroupListing": "kafka_spark.client.groups.admin",
    "PartitionLag": "kafka_spark.client.groups.admin",
    "KafkaClient": "kafka_spark.client.kafka_client",
    "GroupMember": "kafka_spark.client.groups.membership",
    "BrokerInfo": "kafka_spark.client.metadata",
    "ClusterMetadata": "kafka_spark.client.metadata",
    "PartitionInfo": "kafka_spark.client.metadata",
    "TopicInfo": "kafka_spark.client.metadata",
    "TopicPartition": "kafka_spark.client.metadata",
    "EARLIEST": "kafka_spark.client.fetch.offsets",
    "LATEST": "kafka_spark.client.fetch.offsets",
    "ListedOffset": "kafka_spark.client.fetch.offsets",
    "MAX_TIMESTAMP": "kafka_spark.client.fetch.offsets",
    "earliest_offsets": "kafka_spark.client.fetch.offsets",
    "latest_offsets": "kafka_spark.client.fetch.offsets",
    "list_offsets": "kafka_spark.client.fetch.offsets",
    "offsets_for_times": "kafka_spark.client.fetch.offsets",
    "murmur2": "kafka_spark.client.producer.partitioner",
    "partition_for_key": "kafka_spark.client.producer.partitioner",
    "Producer": "kafka_spark.client.producer.producer",
    "RecordFuture": "kafka_spark.client.producer.producer",
    "RecordMetadata": "kafka_spark.client.producer.producer",
    "SentRecords": "kafka_spark.client.producer.producer",
    "NewTopic": "kafka_spark.client.topics",
    "create_topics": "kafka_spark.client.topics",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

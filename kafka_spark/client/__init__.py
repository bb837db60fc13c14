"""The only network layer: connections, TLS/SASL, metadata, fetch, offsets, groups, producer.

Names are loaded on first use: a module that needs one part of the client (the Spark data
source's planning worker needs only metadata types) does not import all of it.
"""

from __future__ import annotations

from kafka_spark.lazy import lazy_exports

_EXPORTS = {
    "Cluster": "kafka_spark.client.cluster",
    "ClientConfig": "kafka_spark.client.config",
    "load_properties": "kafka_spark.client.config",
    "BrokerConnection": "kafka_spark.client.connection",
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
    "FetchStats": "kafka_spark.client.fetcher",
    "RangeReader": "kafka_spark.client.fetcher",
    "fetch_range": "kafka_spark.client.fetcher",
    "CommittedOffset": "kafka_spark.client.groups",
    "GroupAdmin": "kafka_spark.client.groups",
    "GroupDescription": "kafka_spark.client.groups",
    "GroupListing": "kafka_spark.client.groups",
    "PartitionLag": "kafka_spark.client.groups",
    "KafkaClient": "kafka_spark.client.kafka_client",
    "GroupMember": "kafka_spark.client.membership",
    "BrokerInfo": "kafka_spark.client.metadata",
    "ClusterMetadata": "kafka_spark.client.metadata",
    "PartitionInfo": "kafka_spark.client.metadata",
    "TopicInfo": "kafka_spark.client.metadata",
    "TopicPartition": "kafka_spark.client.metadata",
    "EARLIEST": "kafka_spark.client.offsets",
    "LATEST": "kafka_spark.client.offsets",
    "ListedOffset": "kafka_spark.client.offsets",
    "MAX_TIMESTAMP": "kafka_spark.client.offsets",
    "earliest_offsets": "kafka_spark.client.offsets",
    "latest_offsets": "kafka_spark.client.offsets",
    "list_offsets": "kafka_spark.client.offsets",
    "offsets_for_times": "kafka_spark.client.offsets",
    "murmur2": "kafka_spark.client.partitioner",
    "partition_for_key": "kafka_spark.client.partitioner",
    "Producer": "kafka_spark.client.producer",
    "RecordFuture": "kafka_spark.client.producer",
    "RecordMetadata": "kafka_spark.client.producer",
    "SentRecords": "kafka_spark.client.producer",
    "NewTopic": "kafka_spark.client.topics",
    "create_topics": "kafka_spark.client.topics",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

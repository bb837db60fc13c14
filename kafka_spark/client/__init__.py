"""The only network layer: connections, TLS/SASL, metadata, fetch, offsets, groups, producer."""

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig, load_properties
from kafka_spark.client.connection import BrokerConnection
from kafka_spark.client.errors import (
    ConnectionClosedError,
    FetchTimeoutError,
    NoBrokersAvailableError,
    OffsetOutOfRangeDataLoss,
    ProducerError,
    RequestTimeoutError,
    RetriesExhaustedError,
    UnknownTopicError,
)
from kafka_spark.client.fetcher import FetchStats, RangeReader, fetch_range
from kafka_spark.client.groups import CommittedOffset, GroupAdmin, GroupDescription, GroupListing, PartitionLag
from kafka_spark.client.kafka_client import KafkaClient
from kafka_spark.client.membership import GroupMember
from kafka_spark.client.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo, TopicPartition
from kafka_spark.client.offsets import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    ListedOffset,
    earliest_offsets,
    latest_offsets,
    list_offsets,
    offsets_for_times,
)
from kafka_spark.client.partitioner import murmur2, partition_for_key
from kafka_spark.client.producer import Producer, RecordFuture, RecordMetadata

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "BrokerConnection",
    "BrokerInfo",
    "ClientConfig",
    "Cluster",
    "ClusterMetadata",
    "CommittedOffset",
    "ConnectionClosedError",
    "FetchStats",
    "FetchTimeoutError",
    "GroupAdmin",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "KafkaClient",
    "ListedOffset",
    "NoBrokersAvailableError",
    "OffsetOutOfRangeDataLoss",
    "PartitionInfo",
    "PartitionLag",
    "Producer",
    "ProducerError",
    "RangeReader",
    "RecordFuture",
    "RecordMetadata",
    "RequestTimeoutError",
    "RetriesExhaustedError",
    "TopicInfo",
    "TopicPartition",
    "UnknownTopicError",
    "earliest_offsets",
    "fetch_range",
    "latest_offsets",
    "list_offsets",
    "load_properties",
    "murmur2",
    "offsets_for_times",
    "partition_for_key",
]

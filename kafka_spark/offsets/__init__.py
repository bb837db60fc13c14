"""Offset ranges and their JSON form; offset stores (Delta, Kafka group, ZooKeeper)."""

from kafka_spark.offsets.ranges import (
    EARLIEST,
    LATEST,
    OffsetRange,
    TopicPartition,
    offsets_from_json,
    offsets_to_json,
    split_ranges,
)

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetRange",
    "TopicPartition",
    "offsets_from_json",
    "offsets_to_json",
    "split_ranges",
]

"""Offset ranges and their JSON form, offset specs resolved against a cluster, admission limits per
trigger, and the starting offsets an old ZooKeeper consumer group holds."""

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

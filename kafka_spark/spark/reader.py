"""Executor-side reading of one task's offset range into Arrow batches with Spark's Kafka schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafka_spark.client.fetcher import fetch_range
from kafka_spark.client.pool import pooled_cluster
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.spark.options import SourceOptions

if TYPE_CHECKING:
    import pyarrow as pa


def read_range(options: SourceOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Fetch [r.start, r.end) of one partition, on a cluster the worker's next task can reuse."""
    with pooled_cluster(options.kafka) as cluster:
        yield from fetch_range(cluster, r.topic, r.partition, r.start, r.end,
                               include_headers=options.include_headers,
                               fail_on_data_loss=options.fail_on_data_loss)

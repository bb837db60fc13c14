"""Executor-side reading of one task's offset range into Arrow batches with Spark's Kafka schema."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.fetcher import fetch_range
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.spark.options import SourceOptions

if TYPE_CHECKING:
    import pyarrow as pa

# A task reads a known, usually large range: 8 MiB per fetch instead of the consumer default of
# 1 MiB halves the wall time on 1 KB records (fewer round trips, fewer per-response decode calls),
# for ~16 MiB of buffers per task with two fetches in flight.
RANGE_PARTITION_FETCH_BYTES = 8 << 20


def range_client_config(kafka: Mapping[str, str]) -> dict[str, str]:
    """The task's client properties: the user's, plus a larger per-partition fetch unless they set one."""
    config = dict(kafka)
    names = {k.lower() for k in config}
    if "max.partition.fetch.bytes" not in names:
        limit = RANGE_PARTITION_FETCH_BYTES
        for k, v in config.items():
            if k.lower() == "fetch.max.bytes" and str(v).strip().isdigit():
                limit = min(limit, int(v))
        config["max.partition.fetch.bytes"] = str(limit)
    return config


def read_range(options: SourceOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Fetch [r.start, r.end) of one partition; the connection lives only as long as the task."""
    with Cluster(range_client_config(options.kafka)) as cluster:
        yield from fetch_range(cluster, r.topic, r.partition, r.start, r.end,
                               include_headers=options.include_headers,
                               fail_on_data_loss=options.fail_on_data_loss)

"""Executor-side reading of one task's offset range into Arrow batches with Spark's Kafka schema."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from kafka_spark.client.fetch.fetcher import fetch_range
from kafka_spark.client.pool import pooled_cluster
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.spark.source.options import SourceOptions
from kafka_spark.spark.worker_setup import prepare_worker

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.formats.plan import PayloadPlan


def read_range(options: SourceOptions, r: OffsetRange, views: bool = False) -> Iterator[pa.RecordBatch]:
    """Fetch [r.start, r.end) of one partition, on a cluster the worker's next task can reuse. `views`: keys and
    values as binary_view arrays (for a direct write, never for Spark)."""
    prepare_worker()
    with pooled_cluster(options.kafka) as cluster:
        batches = fetch_range(cluster, r.topic, r.partition, r.start, r.end, include_headers=options.include_headers,
                              fail_on_data_loss=options.fail_on_data_loss, views=views)
        yield from decoded(batches, options.payload_plan)


def decoded(batches: Iterable[pa.RecordBatch], plan: PayloadPlan | None) -> Iterator[pa.RecordBatch]:
    """`batches` with keys and values decoded as `plan` says (unchanged without one)."""
    if plan is None:
        yield from batches
        return
    from kafka_spark.formats.columns import decode_batch

    for batch in batches:
        yield decode_batch(batch, plan)

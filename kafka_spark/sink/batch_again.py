"""A committed batch read again from Kafka, for the repairs of the tables beside a sink's own (dead letters, a
change stream's history) when a crash came between the batch's commit and theirs. Any table format's: the
batch's record (its start and end offsets) says what to read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.sink.plan import BatchPlan
from kafka_spark.sink.position import SinkCommit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_spark.sink.options import KafkaSource


def records_again(spark: Any, source: KafkaSource, committed: SinkCommit) -> DataFrame:
    """The records of `committed`'s batch: its offset ranges (from its start offsets to its end) read again."""
    from kafka_spark.sink.read_plan import read_plan

    start = {tp: off for tp, off in committed.start_offsets.items() if committed.offsets.get(tp, off) > off}
    plan = BatchPlan(committed.batch, start=start, end={tp: committed.offsets[tp] for tp in start})
    return read_plan(spark, source, plan)

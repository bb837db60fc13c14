"""A committed batch read again from Kafka, for the repairs of the tables beside a sink's own (dead letters, a
change stream's history) when a crash came between the batch's commit and theirs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.delta.changes import BatchChanges, batch_changes
from kafka_spark.delta.location import locate
from kafka_spark.sink.plan import BatchPlan
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.value_schema import value_struct

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_spark.sink.change_capture import ChangeCapture
    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing


def records_again(spark: Any, source: KafkaSource, committed: SinkCommit) -> DataFrame:
    """The records of `committed`'s batch: its offset ranges (from its start offsets to its end) read again."""
    from kafka_spark.sink.read_plan import read_plan

    start = {tp: off for tp, off in committed.start_offsets.items() if committed.offsets.get(tp, off) > off}
    plan = BatchPlan(committed.batch, start=start, end={tp: committed.offsets[tp] for tp in start})
    return read_plan(spark, source, plan)


def changes_again(spark: Any, source: KafkaSource, target: SinkTarget, parsing: ValueParsing,
                  committed: SinkCommit, capture: ChangeCapture) -> BatchChanges:
    """`committed`'s change events read again, as its MERGE saw them (the table's column types now); the caller
    releases them."""
    location = locate(target.table, spark)
    table = spark.table(location.name) if location is not None and location.name else \
        spark.read.format("delta").load(target.table)
    value_schema = value_struct(spark, parsing.value_schema) if parsing.value_schema else None
    return batch_changes(records_again(spark, source, committed), capture, table.schema, value_schema,
                         keep_bad=bool(parsing.dead_letter))

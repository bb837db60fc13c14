"""A change stream's committed batch read again from Kafka, for the repairs of the tables beside a sink's own (dead
letters, the history) when a crash came between the batch's commit and theirs; its records are read again as any
format's are (sink/batch_again.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_spark.delta.changes import BatchChanges, batch_changes
from kafka_spark.delta.location import locate
from kafka_spark.sink.batch_again import records_again
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.value_schema import value_struct

if TYPE_CHECKING:
    from kafka_spark.sink.change_capture import ChangeCapture
    from kafka_spark.sink.options import KafkaSource, SinkTarget, ValueParsing


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

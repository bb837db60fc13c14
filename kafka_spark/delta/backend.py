"""Delta Lake as the sink's table format: positions from the Delta log, commits through Delta's writers."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from kafka_spark.delta.dead_letter import check_options, reconcile
from kafka_spark.delta.location import locate
from kafka_spark.delta.position import committed_position, sink_positions
from kafka_spark.delta.routed_writes import RoutedWrites
from kafka_spark.sink.options import KafkaSource, LoadOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.table_format import TableFormat, TableWrites


class DeltaFormat(TableFormat):
    """Delta tables: `txn` + `userMetadata` hold each commit's position; the direct writer or Spark's commits."""

    name = "delta"

    def locate(self, table: str, conf: Any) -> Any | None:
        return locate(table, conf)

    def positions(self, location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
        return sink_positions(location, sink_id)

    def position(self, location: Any, sink_id: str) -> SinkCommit | None:
        return committed_position(location, sink_id) if location is not None else None

    def check(self, spark: Any, options: LoadOptions) -> None:
        check_options(spark, options.target, options.parsing)

    def repair(self, spark: Any, options: LoadOptions, previous: SinkCommit | None) -> None:
        reconcile(spark, options.source, options.target, options.parsing, previous)

    def writes(self, spark: Any, source: KafkaSource,
               choices: MutableMapping[str, Any] | None = None) -> TableWrites:
        return RoutedWrites(spark, source, choices)


DELTA = DeltaFormat()

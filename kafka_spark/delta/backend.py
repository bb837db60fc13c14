"""Delta Lake as the sink's table format: positions from the Delta log, commits through Delta's writers."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.change_history import reconcile_history
from kafka_spark.delta.compaction import compact_after_commit
from kafka_spark.delta.dead_letter import check_options, reconcile
from kafka_spark.delta.location import locate, path_location
from kafka_spark.delta.position import committed_position, sink_positions
from kafka_spark.delta.table_writes import RoutedWrites
from kafka_spark.delta.writer_choice import choose_writer
from kafka_spark.errors import ConfigError
from kafka_spark.sink.options import Compacting, KafkaSource, LoadOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.results import Compaction
from kafka_spark.sink.table_format import TableFormat, TableWrites


class DeltaFormat(TableFormat):
    """Delta tables: `txn` + `userMetadata` hold each commit's position; the direct writer or Spark's commits."""

    name = "delta"
    compacts = True

    def locate(self, table: str, conf: Any) -> Any | None:
        return locate(table, conf)

    def positions(self, location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
        return sink_positions(location, sink_id)

    def position(self, location: Any, sink_id: str) -> SinkCommit | None:
        return committed_position(location, sink_id) if location is not None else None

    def check(self, spark: Any, options: LoadOptions) -> None:
        if options.format.sort_by:
            given = options.format.sort_by
            shown = given if isinstance(given, str) else ", ".join(given)
            raise ConfigError(f"sort_by ({shown}): sort_by applies to Iceberg tables "
                              "(their sort order); a Delta table's files keep the order of the rows, so sort them "
                              "in a transform, or cluster the table with Delta's own OPTIMIZE ... ZORDER BY")
        for entry in options.format.partition_by or ():
            if "(" in entry or ")" in entry:
                raise ConfigError(f"partition_by entry {entry!r}: Delta tables are partitioned by columns only "
                                  "(transforms such as day(c) or bucket(N, c) are Iceberg's); give a column, or "
                                  "make one with a transform")
        check_options(spark, options.target, options.parsing)

    def repair(self, spark: Any, options: LoadOptions, previous: SinkCommit | None) -> None:
        reconcile(spark, options.source, options.target, options.parsing, previous, options.changes)
        topics = list(options.topics)
        reconcile_history(spark, options.source, options.target, options.parsing, previous, options.changes,
                          topics[0] if len(topics) == 1 and not options.pattern else None)

    def choose_writer(self, spark: Any, options: LoadOptions, location: Any) -> Any:
        return choose_writer(spark, options, location)

    def create_table(self, spark: Any, table: str, schema: Any, partition_by: Sequence[str],
                     sort_by: Sequence[str] = ()) -> Any:  # sort_by is refused by `check`
        return path_location(create_catalog_table(spark, table, schema, partition_by), spark, name=table)

    def root(self, location: Any) -> str:
        return str(location.path)

    def compact(self, location: Any, settings: Compacting, writer: Any = None) -> Compaction:
        return compact_after_commit(location, settings, writer)

    def writes(self, spark: Any, source: KafkaSource,
               choices: MutableMapping[str, Any] | None = None) -> TableWrites:
        return RoutedWrites(spark, source, choices)


DELTA = DeltaFormat()

"""Apache Iceberg as the sink's table format: positions in the snapshot summaries, data files written by Spark's
tasks (the direct writer) or pyiceberg's, committed through pyiceberg; a stream's tables compacted (compaction.py).

One `IcebergFormat` per catalog: the core hands it table names, and it finds them in its catalog.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.batch_append import create_table
from kafka_spark.iceberg.catalog import IcebergCatalog, frame_arrow_schema
from kafka_spark.iceberg.compaction import check_compacting, compact_after_commit
from kafka_spark.iceberg.dead_letter import check_options, reconcile
from kafka_spark.iceberg.direct_append import direct_reason
from kafka_spark.iceberg.partitions import check_table_spec, iceberg_schema, parse_partitions, partition_spec
from kafka_spark.iceberg.position import IcebergLocation, sink_positions
from kafka_spark.iceberg.sort_orders import check_table_order, parse_sort_by, sort_order
from kafka_spark.iceberg.table_writes import IcebergWrites, choose_writer
from kafka_spark.records import kafka_schema
from kafka_spark.sink.options import Compacting, KafkaSource, LoadOptions, StreamOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.results import Compaction
from kafka_spark.sink.table_format import TableFormat, TableWrites
from kafka_spark.sink.value_schema import value_struct


class IcebergFormat(TableFormat):
    """The Iceberg tables of one catalog."""

    name = "iceberg"
    compacts = True

    def __init__(self, catalog: IcebergCatalog) -> None:
        self.catalog = catalog

    def __repr__(self) -> str:
        return f"IcebergFormat({self.catalog!r})"

    def locate(self, table: str, conf: Any) -> IcebergLocation | None:
        from pyiceberg.exceptions import NoSuchTableError

        location = IcebergLocation(self.catalog, self.catalog.identifier(table))
        try:
            location.load()
        except NoSuchTableError:
            return None
        return location

    def positions(self, location: Any, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
        return sink_positions(location, sink_id)

    def position(self, location: Any, sink_id: str) -> SinkCommit | None:
        return sink_positions(location, sink_id)[0]

    def check(self, spark: Any, options: LoadOptions) -> None:
        self.catalog.identifier(options.target.table)
        if options.log_dirs is not None:
            raise ConfigError("log_dirs: loads from Kafka's log directories write Delta tables only in this version")
        if options.changes is not None:
            raise ConfigError(f"cdc {options.cdc!r}: change streams are applied to Delta tables only in this "
                              "version (the Iceberg sink appends)")
        self._check_partitions(options)
        if isinstance(options, StreamOptions):
            check_compacting(options.compacting)  # before the stream starts, not at its first compaction
        check_options(self.catalog, options)
        if options.value_schema is not None:
            value_struct(spark, options.value_schema)
        self.choose_writer(spark, options, None)

    def _check_partitions(self, options: LoadOptions) -> None:
        """Refuse a bad `partition_by` or `sort_by` entry, one the Kafka columns do not take (when they are the
        rows), or one that is not the spec or order of the table that exists, before anything is read (the commit
        checks the table again: it may be created meanwhile)."""
        from pyiceberg.exceptions import NoSuchTableError

        partition_by, sort_by = options.format.partition_by, options.format.sort_by
        parse_partitions(partition_by)
        parse_sort_by(sort_by)
        if not partition_by and not sort_by:
            return
        location = IcebergLocation(self.catalog, self.catalog.identifier(options.target.table))
        try:
            table = location.load()
        except NoSuchTableError:
            if direct_reason(options) is None:  # the rows are the Kafka columns: their spec can be built now
                rows = iceberg_schema(kafka_schema(options.source.include_headers))
                partition_spec(rows, partition_by)
                sort_order(rows, sort_by)
            return
        check_table_spec(table.spec(), table.schema(), partition_by, str(location))
        check_table_order(table.sort_order(), table.schema(), sort_by, str(location))

    def repair(self, spark: Any, options: LoadOptions, previous: SinkCommit | None) -> None:
        reconcile(spark, self.catalog, options, previous)

    def choose_writer(self, spark: Any, options: LoadOptions, location: Any) -> Any:
        return choose_writer(options)

    def create_table(self, spark: Any, table: str, schema: Any, partition_by: Sequence[str],
                     sort_by: Sequence[str] = ()) -> IcebergLocation:
        location = IcebergLocation(self.catalog, self.catalog.identifier(table))
        create_table(location, frame_arrow_schema(schema), partition_by, sort_by)
        return location

    def root(self, location: Any) -> str:
        return str(location.load().location())

    def compact(self, location: Any, settings: Compacting, writer: Any = None) -> Compaction:
        # Each commit of either writer reads the table anew: `writer` keeps no table state to bring up to date.
        return compact_after_commit(location, settings)

    def writes(self, spark: Any, source: KafkaSource,
               choices: MutableMapping[str, Any] | None = None) -> TableWrites:
        return IcebergWrites(spark, self.catalog, choices)

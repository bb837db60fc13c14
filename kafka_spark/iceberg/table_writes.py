"""A batch's Iceberg writers, table by table: each table's rows collected as Arrow and appended by pyiceberg.

Every table takes its rows from the batch's Spark read (one shared read serves several tables of a routed
load), so no table reads Kafka itself and there are no files to write before the commits. Each commit is one
snapshot of its table (batch_append.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from kafka_spark.iceberg.batch_append import append_batch
from kafka_spark.iceberg.batch_rows import batch_rows
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink.freshness import arrow_freshness
from kafka_spark.sink.progress import Progress
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.table_format import TableWrites

if TYPE_CHECKING:
    from kafka_spark.iceberg.catalog import IcebergCatalog
    from kafka_spark.sink.plan import BatchPlan
    from kafka_spark.sink.position import SinkCommit
    from kafka_spark.sink.routed import RoutedTable

# The writer every Iceberg table has in this version, as results name it.
WRITER = "pyiceberg"


class IcebergWrites(TableWrites):
    """One batch's Iceberg commits."""

    def __init__(self, spark: Any, catalog: IcebergCatalog) -> None:
        self.spark, self.catalog = spark, catalog
        self._work: dict[str, tuple[BatchPlan, SinkCommit]] = {}

    def writer(self, routed: RoutedTable, location: Any) -> Any:
        return WRITER

    def reads_own(self, routed: RoutedTable) -> bool:
        return False

    def add(self, routed: RoutedTable, plan: BatchPlan, commit: SinkCommit) -> None:
        self._work[routed.table] = (plan, commit)

    def spark_rows(self, routed: RoutedTable) -> bool:
        return True

    def write_files(self) -> None:
        return None

    def commit(self, routed: RoutedTable, rows: Callable[[], Any], label: str, location: Any,
               progress: bool = True) -> LoadResult:
        """Collect the table's rows (`rows()`, transformed by its options) and append them with the batch's
        position in one snapshot."""
        _, commit = self._work[routed.table]
        opts = routed.options
        where = location or IcebergLocation(self.catalog, self.catalog.identifier(routed.table))
        shows = progress and opts.format.progress
        with Progress(self.spark, f"{opts.sink_id} {label}") if shows else nullcontext():
            arrow = batch_rows(opts, rows(), commit.batch)
        counted = dataclasses.replace(commit, records=arrow.num_rows)
        winner, sequence = append_batch(where, arrow, counted, opts.format.partition_by, opts.format.merge_schema)
        return LoadResult("committed", opts.sink_id, commit.batch, rows=arrow.num_rows, table_version=sequence,
                          start=dict(commit.start_offsets), offsets=dict(winner.offsets), run_id=commit.run_id,
                          table=routed.table, topic=routed.topic, writer=WRITER, freshness=arrow_freshness(arrow))

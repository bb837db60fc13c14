"""Kafka -> Iceberg jobs: the sink's loads and streams with Iceberg as the table format.

Each takes the options every table format shares (kafka_spark.sink) and the Iceberg catalog the tables are in:
an `IcebergCatalog`, a mapping of its settings and pyiceberg properties, or a warehouse directory (the embedded
SQLite catalog).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_spark.iceberg.backend import IcebergFormat
from kafka_spark.iceberg.catalog import IcebergCatalog, as_catalog
from kafka_spark.sink import lag
from kafka_spark.sink import load as core_load
from kafka_spark.sink import stream as core_stream
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.options import LoadOptions, StreamOptions
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.run_result import MultiLoadResult

Catalog = IcebergCatalog | Mapping[str, str] | str


def load(spark, options: LoadOptions, catalog: Catalog) -> LoadResult:
    """Load everything new since the table's committed offsets (up to `max_records`) in one Iceberg snapshot."""
    return core_load.load_table(spark, options, IcebergFormat(as_catalog(catalog)))


def load_tables(spark, options: LoadOptions, catalog: Catalog) -> MultiLoadResult:
    """Load every topic `options.routing` selects into its Iceberg table, one snapshot per table; fail-fast
    raises TableCommitError naming the first failing table."""
    return core_load.load_tables(spark, options, IcebergFormat(as_catalog(catalog)))


def start_stream(spark, options: StreamOptions, catalog: Catalog):
    """Start a stream into Iceberg (a `StreamingQuery`): every micro-batch is one snapshot of rows and offsets
    per table; see sink/stream.py. A stream of one table keeps its checkpoint beside the table by default."""
    return core_stream.start_stream(spark, options, IcebergFormat(as_catalog(catalog)))


def tables_lag(options: LoadOptions, catalog: Catalog, conf: Any = None) -> dict[str, SinkLag | None]:
    """Each routed Iceberg table's committed position against the brokers, by table (see sink/lag.py)."""
    return lag.tables_lag(options, IcebergFormat(as_catalog(catalog)), conf)

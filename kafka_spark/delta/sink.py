"""Kafka -> Delta jobs: the sink's loads and streams with Delta as the table format."""

from __future__ import annotations

from typing import Any

from kafka_spark.delta.backend import DELTA
from kafka_spark.sink import lag
from kafka_spark.sink import load as core_load
from kafka_spark.sink import stream as core_stream
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.options import LoadOptions, StreamOptions
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.run_result import MultiLoadResult


def load(spark, options: LoadOptions) -> LoadResult:
    """Load everything new since the table's committed offsets (up to `max_records`) in one Delta commit;
    with `log_dirs`, from Kafka's log directories instead of the brokers."""
    if options.log_dirs is not None and options.routing is None:
        from kafka_spark.delta.log_load import load_log_dirs

        return load_log_dirs(spark, options)
    return core_load.load_table(spark, options, DELTA)


def load_tables(spark, options: LoadOptions) -> MultiLoadResult:
    """Load every topic `options.routing` selects into its Delta table, one commit per table; fail-fast
    raises TableCommitError naming the first failing table."""
    return core_load.load_tables(spark, options, DELTA)


def start_stream(spark, options: StreamOptions):
    """Start a stream into Delta (a `StreamingQuery`): every micro-batch is one Delta commit of rows and offsets
    per table (with `routing`, one per table whose topics moved); see sink/stream.py."""
    return core_stream.start_stream(spark, options, DELTA)


def tables_lag(options: LoadOptions, conf: Any = None) -> dict[str, SinkLag | None]:
    """Each routed Delta table's committed position against the brokers, by table (see sink/lag.py)."""
    return lag.tables_lag(options, DELTA, conf)

"""Delta Lake sink: Kafka offsets committed in the same Delta transaction as the rows; resume; lag."""

from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.position import committed_position, committed_positions
from kafka_spark.delta.sink import load, load_tables, tables_lag
from kafka_spark.delta.stream import CheckpointMismatchError, start_stream
from kafka_spark.sink.errors import (
    BadRecordError,
    BatchAlreadyCommittedError,
    ConcurrentWriterError,
    OffsetsMovedBackwardsError,
    SinkError,
)
from kafka_spark.sink.options import LoadOptions, StreamOptions, trigger_kwargs
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.routing import Routing, Split, TableSettings
from kafka_spark.sink.run_result import MultiLoadResult, TableCommitError

__all__ = [
    "BadRecordError",
    "BatchAlreadyCommittedError",
    "CheckpointMismatchError",
    "ConcurrentWriterError",
    "LoadOptions",
    "LoadResult",
    "MultiLoadResult",
    "OffsetsMovedBackwardsError",
    "Routing",
    "SinkCommit",
    "SinkError",
    "Split",
    "StreamOptions",
    "TableCommitError",
    "TableSettings",
    "committed_position",
    "committed_positions",
    "load",
    "load_tables",
    "start_stream",
    "table_lag",
    "tables_lag",
    "trigger_kwargs",
]

"""Delta Lake sink: Kafka offsets committed in the same Delta transaction as the rows; resume; lag."""

from kafka_spark.delta.errors import (
    BadRecordError,
    BatchAlreadyCommittedError,
    ConcurrentWriterError,
    OffsetsMovedBackwardsError,
    SinkError,
)
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.multi_load import load_tables
from kafka_spark.delta.multi_result import MultiLoadResult, TableCommitError
from kafka_spark.delta.options import LoadOptions, StreamOptions, trigger_kwargs
from kafka_spark.delta.position import SinkCommit, committed_position, committed_positions
from kafka_spark.delta.results import LoadResult
from kafka_spark.delta.routed_lag import tables_lag
from kafka_spark.delta.routing import Routing, Split, TableSettings
from kafka_spark.delta.sink import load
from kafka_spark.delta.stream import CheckpointMismatchError, start_stream

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

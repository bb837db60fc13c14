"""Delta Lake sink: Kafka offsets committed in the same Delta transaction as the rows; resume; lag."""

from kafka_spark.delta.errors import (
    BadRecordError,
    BatchAlreadyCommittedError,
    ConcurrentWriterError,
    OffsetsMovedBackwardsError,
    SinkError,
)
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.options import LoadOptions, StreamOptions
from kafka_spark.delta.position import SinkCommit, committed_position, committed_positions
from kafka_spark.delta.sink import LoadResult, load
from kafka_spark.delta.stream import CheckpointMismatchError, start_stream, trigger_kwargs

__all__ = [
    "BadRecordError",
    "BatchAlreadyCommittedError",
    "CheckpointMismatchError",
    "ConcurrentWriterError",
    "LoadOptions",
    "LoadResult",
    "OffsetsMovedBackwardsError",
    "SinkCommit",
    "SinkError",
    "StreamOptions",
    "committed_position",
    "committed_positions",
    "load",
    "start_stream",
    "table_lag",
    "trigger_kwargs",
]

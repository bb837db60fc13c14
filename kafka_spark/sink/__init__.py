"""The sink's core, whatever the table format: Kafka records into tables with their offsets in the same commit.

Options (`LoadOptions`, `StreamOptions`), routing (`Routing`, `Split`, `TableSettings`), the batch plan and
resume rules (plan.py), positions (`SinkCommit`), the read (read_plan.py), the direct writer's Parquet tasks
(parquet/), results (`LoadResult`, `MultiLoadResult`), progress, publishing to consumer groups, and the one
path that runs a load (load.py) or a stream (stream.py) through a `TableFormat` (table_format.py).
Delta is one table format (kafka_spark.delta); its public entry points are there.
"""

from kafka_spark.sink.errors import (
    BadRecordError,
    BatchAlreadyCommittedError,
    CheckpointMismatchError,
    ConcurrentWriterError,
    OffsetsMovedBackwardsError,
    SinkError,
    TableLogError,
    UnroutedRecordError,
)
from kafka_spark.sink.options import LoadOptions, StreamOptions
from kafka_spark.sink.position import SinkCommit
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.routing import Routing, Split, TableSettings
from kafka_spark.sink.run_result import MultiLoadResult, TableCommitError
from kafka_spark.sink.table_format import TableFormat, TableWrites

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
    "TableFormat",
    "TableLogError",
    "TableSettings",
    "TableWrites",
    "UnroutedRecordError",
]

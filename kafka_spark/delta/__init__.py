"""Delta Lake as the sink's table format: loads and streams into Delta tables, with the Kafka offsets committed
in the same Delta transaction as the rows; positions and lag read from a table alone.

The options, routing, results and errors every table format shares are in kafka_spark.sink.
"""

from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.position import committed_position, committed_positions
from kafka_spark.delta.sink import load, load_tables, start_stream, tables_lag
from kafka_spark.sink.errors import CheckpointMismatchError

__all__ = [
    "CheckpointMismatchError",
    "DeltaLogError",
    "committed_position",
    "committed_positions",
    "load",
    "load_tables",
    "start_stream",
    "table_lag",
    "tables_lag",
]

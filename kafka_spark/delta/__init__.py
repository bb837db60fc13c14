"""Delta Lake as the sink's table format: loads and streams into Delta tables, with the Kafka offsets committed
in the same Delta transaction as the rows; positions and lag read from a table alone.

The options, routing, results and errors every table format shares are in kafka_spark.sink. `compact_table` and
`vacuum_table` keep a table's files few (compaction.py).
"""

from kafka_spark.delta.compaction import compact_table, vacuum_table
from kafka_spark.delta.errors import DeltaLogError, MaintenanceError
from kafka_spark.delta.lag import table_lag
from kafka_spark.delta.position import committed_position, committed_positions
from kafka_spark.delta.sink import load, load_tables, start_stream, tables_lag
from kafka_spark.sink.errors import CheckpointMismatchError

__all__ = [
    "CheckpointMismatchError",
    "DeltaLogError",
    "MaintenanceError",
    "committed_position",
    "committed_positions",
    "compact_table",
    "load",
    "load_tables",
    "start_stream",
    "table_lag",
    "tables_lag",
    "vacuum_table",
]

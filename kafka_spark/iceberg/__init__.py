"""Apache Iceberg as the sink's table format: loads and streams into Iceberg tables, with the Kafka offsets in
the summary of the same snapshot as the rows; positions read from a table alone.

    from kafka_spark.iceberg import IcebergCatalog, load

The options, routing, results and errors every table format shares are in kafka_spark.sink.
`compact_iceberg_table` keeps a table's files few (compaction.py).
"""

from kafka_spark.iceberg.backend import IcebergFormat
from kafka_spark.iceberg.catalog import IcebergCatalog
from kafka_spark.iceberg.compaction import CompactionError, compact_iceberg_table
from kafka_spark.iceberg.evolution import IncompatibleTypeError, SchemaMismatchError
from kafka_spark.iceberg.position import committed_position, committed_positions
from kafka_spark.iceberg.sink import load, load_tables, start_stream, tables_lag
from kafka_spark.sink.errors import CheckpointMismatchError

__all__ = [
    "CheckpointMismatchError",
    "CompactionError",
    "IcebergCatalog",
    "IcebergFormat",
    "IncompatibleTypeError",
    "SchemaMismatchError",
    "committed_position",
    "committed_positions",
    "compact_iceberg_table",
    "load",
    "load_tables",
    "start_stream",
    "tables_lag",
]

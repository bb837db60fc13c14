"""The direct writer's task side, whatever the table format: an offset range fetched (and decoded) into
Parquet files under the table's root (files.py), their column statistics (stats.py), Hive-style partition
values (partition_values.py), and one read writing several tables' files (routes.py)."""

"""Rows of a batch appended to a table beside the sink's own (dead letters, a change stream's history) as that
batch: the batch's `txn` and its JSON ride along, so Delta skips an append the table already holds and a repair
can tell which batches a side table has."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_spark.sink.position import SinkCommit, app_id

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def append_batch_rows(rows: DataFrame, commit: SinkCommit, table: str) -> None:
    """Append `rows`, after the columns `sink` and `batch`, to the Delta `table` with `commit`'s `txn`
    (`txnAppId`/`txnVersion`) and its JSON as `userMetadata`; columns new to the table are added."""
    from pyspark.sql import functions as F

    (rows.select(F.lit(commit.sink_id).alias("sink"), F.lit(commit.batch).cast("long").alias("batch"), "*")
     .write.format("delta").mode("append")
     .option("txnAppId", app_id(commit.sink_id)).option("txnVersion", commit.batch)
     .option("userMetadata", commit.to_json())
     .option("mergeSchema", "true")
     .save(table))


def side_table_batch(spark: object, table: str, sink_id: str) -> int | None:
    """The sink's last batch a side table holds (its `txn`), None when it holds none or does not exist."""
    from kafka_spark.delta.location import path_location

    state = path_location(table, spark).state()
    app = app_id(sink_id)
    return state.txn_versions([app]).get(app) if state.refresh() is not None else None

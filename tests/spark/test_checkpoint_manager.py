"""Local sessions keep streams' checkpoints with Spark's FileSystem-based file manager (kafka_spark/local/spark.py:
the FileContext-based default costs a local disk ~40 ms a file): the class named for this PySpark exists, and a
query keeps its offset and commit logs with it."""

from __future__ import annotations

from pathlib import Path

from kafka_spark.local.spark import CHECKPOINT_MANAGER, checkpoint_manager


def test_the_session_names_a_manager_spark_has_and_a_query_checkpoints_with_it(spark, tmp_path: Path) -> None:
    name = spark.conf.get(CHECKPOINT_MANAGER)
    assert name == checkpoint_manager() and name.endswith(".FileSystemBasedCheckpointFileManager")
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    assert jvm.java.lang.Class.forName(name, False, loader).getName() == name
    checkpoint = tmp_path / "checkpoint"
    query = (spark.readStream.format("rate").option("rowsPerSecond", "5").load().writeStream.format("noop")
             .option("checkpointLocation", str(checkpoint)).trigger(once=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert (checkpoint / "offsets" / "0").is_file() and (checkpoint / "commits" / "0").is_file()

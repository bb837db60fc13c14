"""In a local session every Python process Spark starts imports the installed PySpark, not Spark's zip (the
executors' workers and a stream's source process, started fresh for each query)."""

from __future__ import annotations

import json
from pathlib import Path

import pyspark

PACKAGE_INIT = str(Path(pyspark.__file__).parent / "__init__.py")


def test_executor_workers_import_the_installed_pyspark(spark) -> None:
    files = spark.sparkContext.parallelize(range(2), 2).map(lambda _: __import__("pyspark").__file__).collect()
    assert files == [PACKAGE_INIT, PACKAGE_INIT]


def test_a_stream_source_process_imports_the_installed_pyspark(spark, tmp_path: Path) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    # Defined here so that Spark ships the classes by value to the source's process.
    class Reader(DataSourceStreamReader):
        def initialOffset(self) -> dict:
            import pyspark as loaded

            return {"file": loaded.__file__}

        def latestOffset(self) -> dict:
            return self.initialOffset()

        def partitions(self, start: dict, end: dict) -> list[InputPartition]:
            return []

        def read(self, partition: InputPartition):
            return iter(())

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "which-pyspark"

        def schema(self) -> str:
            return "x int"

        def streamReader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    query = (spark.readStream.format("which-pyspark").load().writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    offsets = [json.loads(p.sources[0].endOffset) for p in query.recentProgress if p.sources[0].endOffset]
    assert offsets and {o["file"] for o in offsets} == {PACKAGE_INIT}


def test_tasks_run_in_workers_of_our_daemon(spark) -> None:
    # A reused worker is a fork of the daemon process: its __main__ is the daemon module Spark started.
    def daemon_of(_):
        import sys

        main = sys.modules["__main__"]
        yield main.__spec__.name if main.__spec__ else None

    names = spark.sparkContext.parallelize(range(4), 4).mapPartitions(daemon_of).collect()
    assert names == ["kafka_spark.local.pyspark_worker_daemon"] * 4

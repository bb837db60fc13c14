"""In a local session every Python process Spark starts imports the installed PySpark, not Spark's zip (the
executors' workers and a stream's source process, started fresh for each query), and the workers talk to the
JVM over a Unix socket, not TCP."""

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



def test_executor_workers_talk_to_the_jvm_over_a_unix_socket(spark) -> None:
    def socket_families(_: int) -> list[str]:
        # This worker's sockets, by family, from /proc (Linux). Defined here to travel by value.
        import os

        inodes = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        found = []
        for family, table, column in (("unix", "/proc/net/unix", 6), ("tcp", "/proc/net/tcp", 9),
                                      ("tcp6", "/proc/net/tcp6", 9)):
            with open(table) as f:
                rows = [line.split() for line in f.read().splitlines()[1:]]
            found += [family for row in rows if len(row) > column and row[column] in inodes]
        return sorted(found)

    families = spark.sparkContext.parallelize(range(2), 2).map(socket_families).collect()
    for found in families:
        assert "unix" in found and not {"tcp", "tcp6"} & set(found), families

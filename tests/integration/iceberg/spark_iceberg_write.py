"""Iceberg loads through Spark's Iceberg writer, under a PySpark that Iceberg has a runtime for (4.1).

    spark_iceberg_write.py SPEC.json PHASE

SPEC.json: `{"jars": [the runtime's and SQLite's JDBC driver's jars], "bootstrap", "topic", "warehouse",
"cap"}`. The package comes from the repository (PYTHONPATH). PHASE "crash": a first batch of `db.forced`
(writer "spark"), then the next one killed at "before-commit", after Spark's write to its staging branch (this
process dies there). PHASE "resume": that batch again, then the rest; then `db.orc`, a table whose files are ORC,
loaded twice with writer "auto". PHASE "all": both in one process, the next batch stopped by an error at the
same point instead of the kill. Each load's summary is printed as a line of JSON (`{"load": name, ...}`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kafka_spark.iceberg import IcebergCatalog, load
from kafka_spark.local.spark import local_spark, local_spark_configs
from kafka_spark.sink import LoadOptions


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    phase = sys.argv[2]
    conf = local_spark_configs("local[1]")
    spark = local_spark("iceberg-spark-writer", "local[1]",
                        {"spark.jars": ",".join([conf["spark.jars"], *spec["jars"]])})
    catalog = IcebergCatalog(warehouse=spec["warehouse"])

    def run(name: str, table: str, writer: str, cap: int | None) -> None:
        options = LoadOptions(table=table, kafka={"bootstrap.servers": spec["bootstrap"]}, topics=[spec["topic"]],
                              sink_id="spark-writer", max_records=cap, writer=writer, partition_by=["partition"])
        print(json.dumps({"load": name, **load(spark, options, catalog).summary()}), flush=True)

    if phase in ("crash", "all"):
        run("first", "db.forced", "spark", spec["cap"])
        if phase == "crash":
            os.environ["KAFKA_SPARK_CRASH_AT"] = "before-commit"
            run("killed", "db.forced", "spark", spec["cap"])
        # The suite's schedule: the run stops at the same point in this process (its staging branch written,
        # nothing on the main branch), which leaves the table as the kill does.
        stop_before_commit(lambda: run("stopped", "db.forced", "spark", spec["cap"]))
    if phase in ("resume", "all"):
        run("resumed", "db.forced", "spark", spec["cap"])
        run("rest", "db.forced", "spark", None)
        # An ORC table made the way Spark users make one, which neither the direct writer nor pyiceberg writes
        # (the loads above registered the catalog in the session under its name).
        name = catalog.name
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.db")
        spark.sql(f"CREATE TABLE {name}.db.orc (key BINARY, value BINARY, topic STRING, partition INT, offset "
                  "BIGINT, timestamp TIMESTAMP, timestampType INT) USING iceberg PARTITIONED BY (partition) "
                  "TBLPROPERTIES ('write.format.default'='orc')")
        run("orc-first", "db.orc", "auto", spec["cap"])
        run("orc-rest", "db.orc", "auto", None)
    spark.stop()


def stop_before_commit(load_once: Any) -> None:
    import kafka_spark.iceberg.spark_append as spark_append

    def stop(*_: Any, **__: Any) -> Any:
        raise RuntimeError("stopped before the commit")

    real, spark_append.commit_batch = spark_append.commit_batch, stop
    try:
        load_once()
    except Exception as exc:
        print(json.dumps({"load": "stopped", "error": str(exc)}), flush=True)
    finally:
        spark_append.commit_batch = real


if __name__ == "__main__":
    main()

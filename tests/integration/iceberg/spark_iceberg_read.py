"""Iceberg tables read by Apache Iceberg's own Spark runtime, in an environment without kafka-spark.

    spark_iceberg_read.py SPEC.json OUT_DIR

SPEC.json: `{"jar": the iceberg-spark-runtime jar, "java_options": driver JVM options, "reads": [{"name",
"metadata": a table's metadata.json, "snapshot_id": null or a snapshot to read}, ...]}`. A snapshot is read by
Spark's time-travel option `versionAsOf`.

Each table is loaded from its metadata file (Iceberg's Spark source opens a table from a path, no catalog
involved): every read's rows go to OUT_DIR/<name>.arrow (Arrow IPC, as `DataFrame.toArrow` gives them), and
one line of JSON on stdout tells Spark's version, each read's row count and schema, and each table's snapshots
as Iceberg's `snapshots` metadata table lists them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    import pyarrow as pa
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[1]").appName("iceberg-spark-reader")
               .config("spark.jars", spec["jar"])
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               # timestamps come out labelled UTC, as the sink writes them (the instants do not depend on it)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(out / "spark-warehouse")))
    if spec.get("java_options"):
        builder = builder.config("spark.driver.extraJavaOptions", spec["java_options"])
    spark = builder.getOrCreate()
    result: dict[str, Any] = {"spark": spark.version, "reads": {}, "snapshots": {}}
    try:
        for read in spec["reads"]:
            reader = spark.read.format("iceberg")
            if read.get("snapshot_id") is not None:
                # Spark's own time-travel option: the runtime for Spark 4.1 refuses Iceberg's older `snapshot-id`
                reader = reader.option("versionAsOf", str(read["snapshot_id"]))
            df = reader.load(read["metadata"])
            rows = df.toArrow()
            with pa.OSFile(str(out / f"{read['name']}.arrow"), "wb") as sink, \
                    pa.ipc.new_file(sink, rows.schema) as writer:
                writer.write_table(rows)
            result["reads"][read["name"]] = {"rows": rows.num_rows, "schema": df.schema.simpleString()}
            if read.get("snapshot_id") is None:
                result["snapshots"][read["name"]] = snapshots(spark, read["metadata"])
    finally:
        spark.stop()
    print(json.dumps(result), flush=True)


def snapshots(spark: Any, metadata: str) -> list[dict[str, Any]]:
    """The table's snapshots, oldest first, from Iceberg's `snapshots` metadata table (`<path>#snapshots`)."""
    rows = (spark.read.format("iceberg").load(f"{metadata}#snapshots")
            .selectExpr("snapshot_id", "parent_id", "operation", "summary", "unix_micros(committed_at) AS at")
            .orderBy("at", "snapshot_id").collect())
    return [{"snapshot_id": r.snapshot_id, "parent_id": r.parent_id, "operation": r.operation,
             "summary": dict(r.summary or {})} for r in rows]


if __name__ == "__main__":
    main()

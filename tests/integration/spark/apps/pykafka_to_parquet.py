"""spark-submit application: read a topic with `format("pykafka")` and write the rows as Parquet.

Usage: pykafka_to_parquet.py BOOTSTRAP TOPIC OUTPUT_DIR. Prints one JSON line with the master and
the number of executors.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    bootstrap, topic, output = argv[1:4]
    spark = SparkSession.builder.appName("pykafka-to-parquet").getOrCreate()
    df = (spark.read.format("pykafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("minPartitions", "4").load())
    df.write.mode("overwrite").parquet(output)
    sc = spark.sparkContext
    # The block managers are the driver's plus one per executor.
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    print(json.dumps({"master": sc.master, "executors": executors}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

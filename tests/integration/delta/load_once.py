"""One batch load in a fresh process: the unit a crash test kills and re-runs."""

from __future__ import annotations

import json
import sys

from kafka_spark.delta import LoadOptions, load
from kafka_spark.local.spark import local_spark


def main() -> None:
    bootstrap, topic, table, cap = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    spark = local_spark("kafka-spark-crash-test")
    result = load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                     sink_id="crash-test", max_records=cap))
    print(json.dumps(result.summary()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

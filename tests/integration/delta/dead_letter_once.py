"""One load with a value schema and a dead-letter table in a fresh process: the unit a crash test kills.

    dead_letter_once.py BOOTSTRAP TOPIC TABLE DEAD_LETTER_TABLE VALUE_SCHEMA
"""

from __future__ import annotations

import sys

from kafka_spark.delta import load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def main() -> None:
    bootstrap, topic, table, dead_letter, value_schema = sys.argv[1:6]
    spark = local_spark("kafka-spark-dead-letter-test")
    load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id="crash-test",
                            value_schema=value_schema, dead_letter=dead_letter))
    spark.stop()


if __name__ == "__main__":
    main()

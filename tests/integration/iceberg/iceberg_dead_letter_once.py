"""One Iceberg load with a value schema and a dead-letter table in a fresh process: the unit a crash test kills.

    iceberg_dead_letter_once.py BOOTSTRAP TOPIC WAREHOUSE TABLE DEAD_LETTER_TABLE VALUE_SCHEMA SINK_ID
"""

from __future__ import annotations

import sys

from kafka_spark.iceberg import IcebergCatalog, load
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import LoadOptions


def main() -> None:
    bootstrap, topic, warehouse, table, dead_letter, value_schema, sink_id = sys.argv[1:8]
    spark = local_spark("kafka-spark-iceberg-dead-letter-test")
    load(spark, LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id=sink_id,
                            value_schema=value_schema, dead_letter=dead_letter), IcebergCatalog(warehouse=warehouse))
    spark.stop()


if __name__ == "__main__":
    main()

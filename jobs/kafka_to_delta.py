"""Load Kafka topics into a Delta table, committing the Kafka offsets in the same Delta transaction as the rows.

    ./spark-submit.sh jobs/kafka_to_delta.py          # demo: local broker, sample page views, ./data/page_views
    ./spark-submit.sh jobs/kafka_to_delta.py -b host:9092 --topic orders --table /lake/orders
    ./spark-submit.sh jobs/kafka_to_delta.py --config conf/kafka-to-delta.toml --max-records 1000000
    ./spark-submit.sh jobs/kafka_to_delta.py --config conf/bronze-layer.toml   # a table per topic
    ./spark-submit.sh jobs/kafka_to_delta.py --config conf/kafka-to-iceberg.toml   # an Apache Iceberg table

Each run loads what is new since the offsets the table has committed (at most --max-records) in one Delta
commit, so a run that fails or is killed is simply run again. Flags override the environment
(KAFKA_SPARK_<KEY>), which overrides the --config file. With no broker given, the job starts (or reuses)
the local broker of `kafka-spark local start` and seeds it with sample page views if that topic is empty.
The same application without spark-submit: `kafka-spark load`.
"""

import sys

from kafka_spark.app.load import main

if __name__ == "__main__":
    sys.exit(main())

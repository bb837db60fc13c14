"""Stream Kafka topics into a Delta table: every micro-batch's rows and Kafka offsets in one Delta commit.

    ./spark-submit.sh jobs/stream_to_delta.py          # demo: local broker, live sample page views
    ./spark-submit.sh jobs/stream_to_delta.py -b host:9092 --topic orders --table /lake/orders --trigger 30s
    ./spark-submit.sh jobs/stream_to_delta.py --config conf/stream-to-delta.toml --trigger available-now
    ./spark-submit.sh jobs/stream_to_delta.py --config conf/bronze-layer.toml --trigger 1m   # a table per topic
    ./spark-submit.sh jobs/stream_to_delta.py --config conf/kafka-to-iceberg.toml   # an Apache Iceberg table

A Structured Streaming query reads `readStream.format("pykafka")` and commits each micro-batch with the
same protocol as kafka_to_delta.py, so the two continue each other on one table and sink. The query runs
until stopped (Ctrl-C or SIGTERM: the micro-batch in flight finishes first, exit 0; a second Ctrl-C
stops at once, exit 130), or, with `--trigger available-now` / `once`, until it has loaded what the
topics held when it started. A lost or deleted checkpoint restarts from the offsets committed in the
table. The same application without spark-submit: `kafka-spark stream`.
"""

import sys

from kafka_spark.app.stream import main

if __name__ == "__main__":
    sys.exit(main())

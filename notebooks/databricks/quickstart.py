# Databricks notebook source
# MAGIC %md
# MAGIC **On Databricks** (exported from `notebooks/quickstart.ipynb`; see `docs/databricks.md`): install kafka-spark as a
# MAGIC cluster library and set `KAFKA_BOOTSTRAP` to your brokers (a cluster environment variable, or
# MAGIC `os.environ["KAFKA_BOOTSTRAP"] = ...` in a cell above); cells that would start a local broker need it.
# MAGIC `local_spark()` returns the cluster's own session there. The tables go to a temporary directory on the driver:
# MAGIC use a single-node cluster, or set `table` to a path on a Unity Catalog volume (`/Volumes/...`).

# COMMAND ----------

# MAGIC %md
# MAGIC # kafka-spark quick start
# MAGIC
# MAGIC Read a Kafka topic with `spark.read.format("pykafka")` — the options and schema of Spark's own Kafka
# MAGIC source, with no JVM Kafka client — then load it into Delta Lake with the offsets committed in the same
# MAGIC transaction as the rows.
# MAGIC
# MAGIC Run this notebook with the project's interpreter (`.venv/bin/python -m jupyter notebook`, or select
# MAGIC `.venv` as the kernel). Set `KAFKA_BOOTSTRAP` to use your own cluster; otherwise a local broker is
# MAGIC started (stop it later with `.venv/bin/kafka-spark local stop`).

# COMMAND ----------

import json, os, tempfile
from pathlib import Path
from kafka_spark.local import broker_daemon
from kafka_spark.local.spark import local_spark

bootstrap = os.environ.get("KAFKA_BOOTSTRAP")
if not bootstrap:
    broker, started = broker_daemon.start()
    bootstrap = broker.bootstrap
print("Kafka at", bootstrap)
spark = local_spark("kafka-spark-quickstart")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Produce a small activity stream with our producer

# COMMAND ----------

from kafka_spark import KafkaClient

topic = os.environ.get("QUICKSTART_TOPIC", "quickstart_views")
with KafkaClient({"bootstrap.servers": bootstrap, "compression.type": "lz4"}) as client:
    producer = client.producer()
    for i in range(2000):
        user = f"user-{i % 50}"
        producer.send(topic, json.dumps({"user": user, "page": f"/p/{i % 13}"}).encode(), key=user.encode())
    producer.flush()
    print(client.latest_offsets(client.partitions(topic)))

# COMMAND ----------

# MAGIC %md
# MAGIC ## Read it with `format("pykafka")` — same options, same schema as `format("kafka")`

# COMMAND ----------

df = (spark.read.format("pykafka")
      .option("kafka.bootstrap.servers", bootstrap)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .load())
df.printSchema()
views = df.selectExpr("CAST(key AS STRING) AS user", "get_json_object(CAST(value AS STRING), '$.page') AS page")
views.groupBy("page").count().orderBy("page").show(5)
assert df.count() >= 2000

# COMMAND ----------

# MAGIC %md
# MAGIC ## Load into Delta with the offsets in the same commit, and resume from the table alone

# COMMAND ----------

from kafka_spark import LoadOptions, committed_position, load

table = os.path.join(tempfile.mkdtemp(prefix="quickstart-"), "views")
options = LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                      transform="SELECT CAST(key AS STRING) AS user, CAST(value AS STRING) AS json, "
                                "topic, partition, offset, timestamp FROM kafka")
first = load(spark, options)
print(first.summary())
again = load(spark, options)
print(again.status)  # up-to-date: nothing new since the committed offsets
print(committed_position(table, "default").offsets)
assert spark.read.format("delta").load(table).count() == first.rows

# COMMAND ----------

# MAGIC %md
# MAGIC ## Read a stopped broker's files with `format("pykafka-log")` — no broker in the path
# MAGIC
# MAGIC Set `KAFKA_LOG_DIRS` to a copy of a broker's `log.dirs` (commas and globs allowed) to read your own;
# MAGIC otherwise a throwaway local broker is filled and stopped, and its log dir is read.

# COMMAND ----------

from kafka_spark.local import start_kafka

log_dirs, log_topic = os.environ.get("KAFKA_LOG_DIRS"), os.environ.get("KAFKA_LOG_TOPIC", "quickstart_files")
if not log_dirs:
    with start_kafka(Path(tempfile.mkdtemp(prefix="quickstart-broker-")), secure=False) as node:
        with KafkaClient({"bootstrap.servers": node.bootstrap}) as client:
            producer = client.producer()
            for i in range(1000):
                producer.send(log_topic, f"event {i}".encode(), key=f"user-{i % 7}".encode())
            producer.flush()
            written = sum(client.latest_offsets(client.partitions(log_topic)).values())
    # Stopping the broker (leaving the with-block) checkpoints the high watermark the reader uses as `latest`.
    log_dirs = str(node.log_dir)
files = (spark.read.format("pykafka-log")
         .option("path", log_dirs)
         .option("subscribe", log_topic)
         .option("startingOffsets", "earliest").option("endingOffsets", "latest")
         .load())
files.groupBy("partition").count().orderBy("partition").show()
if not os.environ.get("KAFKA_LOG_DIRS"):
    assert files.count() == written == 1000

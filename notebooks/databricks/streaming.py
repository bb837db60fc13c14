# Databricks notebook source
# MAGIC %md
# MAGIC **On Databricks** (exported from `notebooks/streaming.ipynb`; see `docs/databricks.md`): install kafka-spark as a
# MAGIC cluster library and set `KAFKA_BOOTSTRAP` to your brokers (a cluster environment variable, or
# MAGIC `os.environ["KAFKA_BOOTSTRAP"] = ...` in a cell above); cells that would start a local broker need it.
# MAGIC `local_spark()` returns the cluster's own session there. The tables go to a temporary directory on the driver:
# MAGIC use a single-node cluster, or set `table` to a path on a Unity Catalog volume (`/Volumes/...`).

# COMMAND ----------

# MAGIC %md
# MAGIC # Streaming Kafka into Delta with `readStream.format("pykafka")`
# MAGIC
# MAGIC A producer keeps writing page views; a Structured Streaming query reads them with `pykafka` (the
# MAGIC options of Spark's own Kafka source) and writes each micro-batch into a Delta table **with its Kafka
# MAGIC offsets in the same commit**. We watch micro-batches arrive, plot throughput and lag from the query's
# MAGIC progress, and query the table.
# MAGIC
# MAGIC Run it with the project's interpreter (`.venv/bin/python -m jupyter notebook`). Set `KAFKA_BOOTSTRAP` to
# MAGIC use your own cluster; otherwise a local broker is started (stop it later with
# MAGIC `.venv/bin/kafka-spark local stop`).

# COMMAND ----------

import json, os, tempfile, threading, time
from kafka_spark.local import broker_daemon
from kafka_spark.local.spark import local_spark

bootstrap = os.environ.get("KAFKA_BOOTSTRAP")
if not bootstrap:
    broker, started = broker_daemon.start()
    bootstrap = broker.bootstrap
topic = os.environ.get("QUICKSTART_TOPIC", "streaming_views")
workdir = tempfile.mkdtemp(prefix="streaming-")
table = os.path.join(workdir, "views")
print("Kafka at", bootstrap, "| topic", topic, "| table", table)
spark = local_spark("kafka-spark-streaming")

# COMMAND ----------

# MAGIC %md
# MAGIC ## A producer that keeps writing
# MAGIC
# MAGIC Three partitions, ~400 records a second for 20 seconds, in a background thread.

# COMMAND ----------

from kafka_spark import KafkaClient
from kafka_spark.local.tools import KafkaTools

KafkaTools("kafka4", bootstrap).create_topic(topic, partitions=3)
produced = 0
stop_producing = threading.Event()

def produce(rate=400, seconds=20):
    global produced
    with KafkaClient({"bootstrap.servers": bootstrap, "linger.ms": 20}) as client:
        producer = client.producer()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not stop_producing.is_set():
            for _ in range(rate // 10):
                user = f"user-{produced % 50}"
                value = json.dumps({"user": user, "page": f"/p/{produced % 13}", "ts": int(time.time() * 1000)})
                producer.send(topic, value.encode(), key=user.encode())
                produced += 1
            producer.flush()
            time.sleep(0.1)

producer_thread = threading.Thread(target=produce, daemon=True)
producer_thread.start()

# COMMAND ----------

# MAGIC %md
# MAGIC ## Start the stream into Delta
# MAGIC
# MAGIC `start_stream` reads the topic with `readStream.format("pykafka")` and writes each micro-batch's rows
# MAGIC **and its end offsets in one Delta commit**, so the table itself says how far the stream has read: a
# MAGIC restart — even with the checkpoint deleted — continues from there, and a replayed micro-batch is never
# MAGIC written twice. (The same as `./spark-submit.sh jobs/stream_to_delta.py`.)

# COMMAND ----------

from kafka_spark import StreamOptions, start_stream

transform = """SELECT CAST(key AS STRING) AS user, get_json_object(CAST(value AS STRING), '$.page') AS page,
                      topic, partition, offset, timestamp FROM kafka"""
query = start_stream(spark, StreamOptions(
    table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id="views",
    starting="earliest", transform=transform, trigger="2s", max_offsets_per_trigger=2000))

# COMMAND ----------

# MAGIC %md
# MAGIC ## Watch micro-batches arrive
# MAGIC
# MAGIC `offsets_behind_latest` turns each progress report into the lag figures Spark's own Kafka source
# MAGIC reports (a Python source cannot put them in the progress itself).

# COMMAND ----------

from kafka_spark import offsets_behind_latest

seen, history = set(), []
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (producer_thread.is_alive() or len(history) < 3):
    for p in query.recentProgress:
        if p.batchId in seen:
            continue
        seen.add(p.batchId)
        lag = offsets_behind_latest(p.sources[0])
        history.append({"batch": p.batchId, "rows": p.numInputRows,
                        "rate": p.processedRowsPerSecond or 0.0,
                        "lag": int(lag.get("maxOffsetsBehindLatest", 0))})
        print(f"batch {p.batchId:>3}: {p.numInputRows:>5} rows, {history[-1]['rate']:>8.0f} rows/s, "
              f"max lag {history[-1]['lag']}")
    time.sleep(1)
producer_thread.join()
query.processAllAvailable()  # drain what is left

# COMMAND ----------

# MAGIC %md
# MAGIC ## Throughput and lag per micro-batch

# COMMAND ----------

import matplotlib
if "ipykernel" not in __import__("sys").modules:
    matplotlib.use("Agg")  # run as a script (the notebook test): draw to a file
import matplotlib.pyplot as plt

batches = [h["batch"] for h in history]
fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
top.bar(batches, [h["rows"] for h in history])
top.set_ylabel("rows per batch")
bottom.plot(batches, [h["lag"] for h in history], marker="o", color="tab:red")
bottom.set_ylabel("max offsets behind latest")
bottom.set_xlabel("micro-batch")
fig.tight_layout()
fig.savefig(os.path.join(workdir, "progress.png"))
plt.show()

# COMMAND ----------

# MAGIC %md
# MAGIC ## Query the table, and its committed position

# COMMAND ----------

query.stop()
views = spark.read.format("delta").load(table)
views.groupBy("page").count().orderBy("page").show(5)
rows = views.count()
distinct = views.select("topic", "partition", "offset").distinct().count()
print(f"{rows} rows, {distinct} distinct offsets, {produced} records produced")

assert rows == distinct == produced
print("rows in the table = records produced")

# The sink's position, read from the table alone (also: kafka-spark delta-offsets <table>).
from kafka_spark import committed_position
position = committed_position(table, "views")
print(f"sink batch {position.batch}:", {str(tp): off for tp, off in sorted(position.offsets.items())})
assert sum(position.offsets.values()) == produced

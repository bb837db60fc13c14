# Databricks notebook source
# MAGIC %md
# MAGIC **On Databricks** (exported from `notebooks/cdc.ipynb`; see `docs/databricks.md`): install kafka-spark as a
# MAGIC cluster library and set `KAFKA_BOOTSTRAP` to your brokers (a cluster environment variable, or
# MAGIC `os.environ["KAFKA_BOOTSTRAP"] = ...` in a cell above); cells that would start a local broker need it.
# MAGIC `local_spark()` returns the cluster's own session there. The tables go to a temporary directory on the driver:
# MAGIC use a single-node cluster, or set `table` to a path on a Unity Catalog volume (`/Volumes/...`).

# COMMAND ----------

# MAGIC %md
# MAGIC # Change data capture: Debezium events into a current-state Delta table
# MAGIC
# MAGIC A small `customers` table in Python plays the source database: each of its changes is sent to Kafka as the
# MAGIC change event Debezium's PostgreSQL connector writes (JSON converter, no schemas). `load(..., cdc="debezium")`
# MAGIC applies them to a Delta table that holds the source table's **current rows**, appends **every change** to a
# MAGIC history table, and sets aside the events it cannot apply in a **dead-letter table**: exactly once, resuming
# MAGIC from the table alone. See `docs/delta/cdc.md`.
# MAGIC
# MAGIC Run it with the project's interpreter (`.venv/bin/python -m jupyter notebook`). Set `KAFKA_BOOTSTRAP` to use
# MAGIC your own cluster; otherwise a local broker is started (stop it later with `.venv/bin/kafka-spark local stop`).

# COMMAND ----------

import json, os, tempfile, time
from kafka_spark.local import broker_daemon
from kafka_spark.local.spark import local_spark

bootstrap = os.environ.get("KAFKA_BOOTSTRAP")
if not bootstrap:
    broker, started = broker_daemon.start()
    bootstrap = broker.bootstrap
# A new topic per run: the table must equal this run's source table, not hold an earlier run's changes too.
topic = os.environ.get("QUICKSTART_TOPIC", f"dbserver1.inventory.customers.{int(time.time())}")
workdir = tempfile.mkdtemp(prefix="cdc-")
table, history, dead_letters = (os.path.join(workdir, name) for name in ("customers", "history", "dead_letters"))
print("Kafka at", bootstrap, "| topic", topic, "| tables under", workdir)
spark = local_spark("kafka-spark-cdc")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The source table and its change events
# MAGIC
# MAGIC `Customers` keeps the source rows and sends each change as Debezium does: the key `{"id": N}`, the value's
# MAGIC envelope `before`/`after`/`source` (with `ts_ms` and the change's log position `lsn`)/`op`, a delete followed
# MAGIC by a tombstone (a null value), a primary-key change as a delete of the old key and a create of the new one.
# MAGIC It also remembers each change's `(id, op)` (a tombstone counts as a delete), to check the history table
# MAGIC against.

# COMMAND ----------

from kafka_spark import KafkaClient

class Customers:
    """A source table whose every change goes to `topic` as a Debezium change event (REPLICA IDENTITY FULL)."""

    columns = ["id", "name", "email", "country"]

    def __init__(self, producer, topic):
        self.producer, self.topic, self.rows, self.lsn, self.sent = producer, topic, {}, 24_000_000, []

    def _send(self, key, op, before, after, snapshot=False):
        self.lsn += 64  # the change's position in PostgreSQL's write-ahead log
        source = {"version": "3.6.1.Final", "connector": "postgresql", "name": "dbserver1",
                  "ts_ms": 1_700_000_000_000 + self.lsn // 64, "snapshot": "true" if snapshot else "false",
                  "db": "inventory", "schema": "public", "table": "customers", "lsn": self.lsn}
        event = {"before": before, "after": after, "source": source, "op": op, "ts_ms": source["ts_ms"] + 5}
        self.producer.send(self.topic, json.dumps(event).encode(), key=json.dumps({"id": key}).encode())
        self.sent.append((key, op))

    def snapshot(self, *rows):
        for row in rows:
            self.rows[row["id"]] = row
            self._send(row["id"], "r", None, row, snapshot=True)

    def insert(self, row):
        self.rows[row["id"]] = row
        self._send(row["id"], "c", None, row)

    def update(self, key, **changes):
        before = self.rows[key]
        self.rows[key] = {**before, **changes}
        self._send(key, "u", before, self.rows[key])

    def delete(self, key):
        self._send(key, "d", self.rows.pop(key), None)
        self.producer.send(self.topic, None, key=json.dumps({"id": key}).encode())  # the tombstone
        self.sent.append((key, "d"))

    def change_key(self, old, new):
        row = {**self.rows[old], "id": new}
        self.delete(old)
        self.insert(row)

    def expected(self):
        return [self.rows[key] for key in sorted(self.rows)]

client = KafkaClient({"bootstrap.servers": bootstrap})
customers = Customers(client.producer(), topic)
customers.snapshot(*({"id": i, "name": name, "email": f"{name.lower()}@example.com", "country": country}
                     for i, (name, country) in enumerate([("Ada", "UK"), ("Grace", "US"), ("Linus", "FI"),
                                                          ("Margaret", "US"), ("Tim", "UK")], start=1)))
customers.insert({"id": 6, "name": "Edsger", "email": "edsger@example.com", "country": "NL"})
customers.insert({"id": 7, "name": "Barbara", "email": "barbara@example.com", "country": "US"})
customers.update(2, email="grace@navy.mil")
customers.update(6, country="US")
customers.update(2, name="Grace H.")  # a key's second change in the same batch: the last one wins
customers.delete(3)
customers.change_key(5, 50)  # a primary-key change: the row moves from key 5 to key 50
customers.producer.flush()
print(len(customers.sent), "change events;", len(customers.rows), "rows in the source table")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Load the changes into the current-state table
# MAGIC
# MAGIC One `load` reads the topic from where the table's last commit ended (here: the beginning), keeps each key's
# MAGIC last change, and applies them with one MERGE (the very first commit creates the table, as an append).
# MAGIC `cdc_metadata` adds each row's last `__op`, `__source_ts_ms` and `__lsn`; `cdc_history` appends every change
# MAGIC to a second table; `dead_letter` takes the events that cannot be applied.

# COMMAND ----------

from kafka_spark.delta import committed_position, load
from kafka_spark.sink import LoadOptions

options = LoadOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic], cdc="debezium",
                      cdc_metadata=True, cdc_history=history, dead_letter=dead_letters)
first = load(spark, options)
print({k: first.summary()[k] for k in ("status", "batch", "rows", "offsets", "dead_letters", "writer")})

def current_state():
    rows = spark.read.format("delta").load(table).select(*Customers.columns).orderBy("id").collect()
    return [row.asDict() for row in rows]

def show_table():
    spark.read.format("delta").load(table).select(*Customers.columns, "__op", "__source_ts_ms", "__lsn")         .orderBy("id").show(truncate=False)

show_table()
assert current_state() == customers.expected()

# COMMAND ----------

# MAGIC %md
# MAGIC The history table has one row per change, in Kafka order, with its batch, offset, `__op` and `__lsn`: both
# MAGIC updates of Grace (the current-state table keeps the last), both changes of the primary-key change (5 deleted,
# MAGIC 50 created), and each delete followed by its tombstone (also `d`).

# COMMAND ----------

changes = spark.read.format("delta").load(history).orderBy("partition", "offset")
changes.select("batch", "offset", "__op", "id", "name", "email", "country", "__lsn").show(50, truncate=False)
# Each key's changes in their order (a key's changes share a partition); a stable sort by key keeps that order.
by_key = lambda pairs: sorted(pairs, key=lambda pair: pair[0])
assert by_key([(r["id"], r["__op"]) for r in changes.collect()]) == by_key(customers.sent)

# COMMAND ----------

# MAGIC %md
# MAGIC `committed_position` reads the sink's position from the table alone: the batch's end offsets (the next
# MAGIC offset to read), which the batch's commit carries. The next load or stream starts there.

# COMMAND ----------

position = committed_position(table, "default")
print(f"batch {position.batch}:", {str(tp): offset for tp, offset in position.offsets.items()},
      "| dead letters", position.dead_letters, "| history", position.history)
assert sum(position.offsets.values()) == sum(first.offsets.values())

# COMMAND ----------

# MAGIC %md
# MAGIC ## Bad events go to the dead-letter table, the rest of the batch applies
# MAGIC
# MAGIC Two records Debezium never sends: a value that is not JSON, and an unknown operation. Without `dead_letter`
# MAGIC they fail the batch before anything is committed; with it they go to the dead-letter table with the reason,
# MAGIC and the batch's good changes are applied.

# COMMAND ----------

producer = customers.producer
producer.send(topic, b"{not json", key=b'{"id": 90}')
producer.send(topic, json.dumps({"op": "x", "after": {"id": 91, "name": "?"}}).encode(), key=b'{"id": 91}')
customers.update(1, country="IE")
customers.insert({"id": 8, "name": "Ken", "email": "ken@example.com", "country": "US"})
customers.delete(7)
producer.flush()

second = load(spark, options)
print({k: second.summary()[k] for k in ("status", "batch", "rows", "offsets", "dead_letters")})
assert (second.status, second.dead_letters) == ("committed", 2)
assert current_state() == customers.expected()
show_table()

letters = spark.read.format("delta").load(dead_letters).orderBy("offset")
letters.selectExpr("batch", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value",
                   "error").show(truncate=False)
assert [r["error"] for r in letters.collect()] == ["the value is not JSON", "unknown operation x"]

# COMMAND ----------

# MAGIC %md
# MAGIC ## Exactly once: the offsets are in the MERGE's commit
# MAGIC
# MAGIC Each batch's MERGE commits the rows and the batch's offsets together (`userMetadata`, with the sink's
# MAGIC application transaction `txn`), so a re-run of a committed batch changes nothing and a kill at any moment
# MAGIC leaves the table at a batch boundary. The history rows and the dead letters follow the commit with the same
# MAGIC `txn`; after a crash between the commit and them, the next run reads that batch again from Kafka and writes
# MAGIC them, once.

# COMMAND ----------

commits = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").orderBy("version").selectExpr(
    "version", "operation", "get_json_object(userMetadata, '$.batch') AS batch",
    "get_json_object(userMetadata, '$.offsets') AS offsets",
    "get_json_object(userMetadata, '$.dead_letters') AS dead_letters")
commits.show(truncate=False)
merge = commits.where("operation = 'MERGE'").collect()[-1]
assert int(merge["batch"]) == second.batch and int(merge["dead_letters"]) == 2
assert load(spark, options).status == "up-to-date"  # nothing new: nothing is applied twice

# COMMAND ----------

# MAGIC %md
# MAGIC ## A stream continues from the table alone
# MAGIC
# MAGIC `start_stream` with a new checkpoint (none exists beside the table yet) starts from the table's committed
# MAGIC position; `trigger="available-now"` applies what is in the topic, one MERGE per micro-batch, and stops.

# COMMAND ----------

from kafka_spark.delta import start_stream
from kafka_spark.sink import StreamOptions

customers.update(4, email="margaret@nasa.gov")
customers.insert({"id": 9, "name": "Frances", "email": "frances@example.com", "country": "US"})
customers.delete(1)
customers.change_key(6, 60)
producer.flush()

query = start_stream(spark, StreamOptions(table=table, kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                          cdc="debezium", cdc_metadata=True, cdc_history=history,
                                          dead_letter=dead_letters, trigger="available-now"))
query.awaitTermination(300)
assert query.exception() is None
show_table()
position = committed_position(table, "default")
print(f"batch {position.batch}:", {str(tp): offset for tp, offset in position.offsets.items()})

# COMMAND ----------

# MAGIC %md
# MAGIC ## The table equals the source table; the history holds every change

# COMMAND ----------

client.close()
assert current_state() == customers.expected()
history_rows = spark.read.format("delta").load(history).orderBy("partition", "offset").collect()
assert by_key([(r["id"], r["__op"]) for r in history_rows]) == by_key(customers.sent)
assert spark.read.format("delta").load(dead_letters).count() == 2
print(f"{len(customers.rows)} rows, {len(history_rows)} changes in the history, 2 dead letters")
print("current state = source table")

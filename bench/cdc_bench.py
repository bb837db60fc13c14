"""Change data capture: the same Debezium changes applied to Delta by Spark's documented pattern and by us.

    .venv/bin/python bench/cdc_bench.py              # 1,000,000 changes over 100,000 keys, 2 runs
    .venv/bin/python bench/cdc_bench.py --quick      # 100,000 changes over 10,000 keys
    .venv/bin/python bench/cdc_bench.py --batch 50000 --runs 3

One broker (kafka_spark.local) and one topic of Debezium JSON change events without the converter's schema
part, keyed by the row's key as Debezium keys them (`{"id":123}`) and so partitioned by it: first one insert
(op c) per key, then random updates (u), deletes (d, each followed by its tombstone) and re-inserts of
deleted keys (c), from a fixed seed, produced once. The bench keeps the source table's final state by key, and
every run's table is compared with it row by row: a run whose table differs fails the bench.

Contenders, each into a fresh Delta table, each a stream with Trigger.AvailableNow in micro-batches of
maxOffsetsPerTrigger --batch:

- spark-merge (the reference): Spark's documented pattern. `readStream.format("kafka")`, tombstones dropped,
  `from_json` of key and value, and `foreachBatch` keeping each key's last change in the micro-batch
  (row_number over the key, by partition and offset descending) for one `DeltaTable.merge`:
  whenMatchedDelete(op = 'd'), whenMatchedUpdateAll, whenNotMatchedInsertAll(op != 'd').
- ours-direct: `kafka_spark.delta.start_stream(cdc="debezium")` with the default writer (auto: delta-rs's
  MERGE for a path table), `value_schema` the source table's columns.
- ours-spark: the same with writer="spark" (Delta's MERGE on Spark): where the gain comes from.

Each run is timed from defining the stream (for the reference, from creating its empty table) to the query's
end; each micro-batch's time is Spark's progress `triggerExecution`, and the batch function's own time is
recorded beside it. A small topic runs every contender first, unrecorded (JIT, class loading, Python workers).
Writes bench/results/cdc-<stamp>.md and .json (and cdc-latest.*).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.avro_report import chosen, command, finish, log, machine
from bench.cdc_report import BY_NAME, CONTENDERS, Batch, Run, markdown, summarize, write
from bench.installed import compile_package

# numRecentProgressUpdates: every micro-batch's progress is kept (Spark's default keeps the last 100).
SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2",
              "spark.sql.streaming.numRecentProgressUpdates": "100000"}
PARTITIONS = 4
SEED = 50
DELETE_SHARE = 0.05  # of the changes after the inserts; a change that picks a deleted key re-inserts it
EMAIL_NULL_SHARE = 0.1
WARMUP = (40_000, 4_000, 5_000)  # changes, keys, batch
# The JVM keeps compiling the VARIANT parsing and MERGE paths well past one small round: in a probe of three
# rounds of the --quick topic in one process, ours took 126, 91 and 65 s and Spark's pattern 103, 64 and 63 s.
WARMUP_ROUNDS = 2
PRODUCE_CHUNK = 50_000
FIRST_TS_MS = 1_767_225_600_000  # 2026-01-01
FIRST_LSN = 24_000_000

# The source table (id is its primary key), as Spark DDL: ours takes it as `value_schema`, the reference
# builds its envelope schema from it, and the reference's table is created with it.
COLUMNS = ("id", "name", "email", "status", "amount", "quantity", "active", "updated_at")
VALUE_SCHEMA = ("id BIGINT, name STRING, email STRING, status STRING, amount DOUBLE, quantity BIGINT, "
                "active BOOLEAN, updated_at BIGINT")
STATUSES = ("new", "active", "suspended", "closed", "pending review")
NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Margaret", "Tony", "Frances")

Row = tuple[Any, ...]  # a source row, in COLUMNS order


def envelope_ddl() -> str:
    """The envelope's schema for `from_json`: before/after rows of the source table, source position, op."""
    row = ", ".join(f"{name}: {kind}" for name, kind in (c.split(" ") for c in VALUE_SCHEMA.split(", ")))
    return (f"before STRUCT<{row}>, after STRUCT<{row}>, source STRUCT<ts_ms: BIGINT, lsn: BIGINT>, "
            "op STRING, ts_ms BIGINT")


@dataclass
class Changes:
    """A produced topic of change events and the source table's state after them (`expected`, by key)."""

    topic: str
    changes: int
    keys: int
    seed: int
    expected: dict[int, Row] = field(default_factory=dict)
    ops: Counter[str] = field(default_factory=Counter)
    records: int = 0  # the changes and the tombstones after the deletes
    value_bytes: int = 0
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    produce_s: float = 0.0

    @property
    def checksum(self) -> dict[str, int]:
        return {"rows": len(self.expected), "quantity_sum": sum(r[5] for r in self.expected.values()),
                "email_count": sum(r[2] is not None for r in self.expected.values())}

    def summary(self) -> dict[str, Any]:
        return {"topic": self.topic, "changes": self.changes, "keys": self.keys, "seed": self.seed,
                "ops": dict(self.ops), "tombstones": self.ops["d"], "records": self.records,
                "partitions": len(self.ranges), "value_bytes": self.value_bytes, "produce_s": self.produce_s,
                "ranges": {str(p): list(r) for p, r in self.ranges.items()}, **self.checksum}


# ---- data -----------------------------------------------------------------------------------------------

def _row(key: int, rng: random.Random, ts: int, old: Row | None) -> Row:
    """A new row of `key`, or `old` with what an update changes: status, amount, quantity, sometimes email."""
    email = None if rng.random() < EMAIL_NULL_SHARE else f"user{key}.{rng.randrange(10_000)}@example.com"
    if old is not None and rng.random() < 0.7:
        email = old[2]
    name = old[1] if old is not None else f"{rng.choice(NAMES)} {key:07d}"
    return (key, name, email, rng.choice(STATUSES), round(rng.uniform(0, 10_000), 2), rng.randrange(1_000_000),
            rng.random() < 0.5, ts)


def _event(op: str, before: Row | None, after: Row | None, lsn: int, ts: int) -> bytes:
    """A Debezium PostgreSQL change event as the JSON converter writes it without schemas (compact JSON)."""
    envelope = {
        "before": None if before is None else dict(zip(COLUMNS, before, strict=True)),
        "after": None if after is None else dict(zip(COLUMNS, after, strict=True)),
        "source": {"version": "2.7.3.Final", "connector": "postgresql", "name": "dbserver1", "ts_ms": ts,
                   "snapshot": "false", "db": "inventory", "sequence": f'["{lsn - 64}","{lsn}"]',
                   "schema": "public", "table": "customers", "txId": lsn // 256, "lsn": lsn, "xmin": None},
        "op": op, "ts_ms": ts + 37, "transaction": None}
    return json.dumps(envelope, separators=(",", ":")).encode()


def events(changes: int, keys: int, seed: int, expected: dict[int, Row], ops: Counter[str]):
    """(key, value) records: `keys` inserts, then random updates, deletes (each followed by its tombstone, as
    Debezium sends them by default) and re-inserts of deleted keys, up to `changes` change events; `expected`
    and `ops` are filled as the source table would be."""
    rng = random.Random(seed)
    nulls = (None,) * (len(COLUMNS) - 1)
    for i in range(changes):
        ts, lsn = FIRST_TS_MS + 3 * i, FIRST_LSN + 64 * i
        key = i + 1 if i < keys else rng.randrange(1, keys + 1)
        record_key = f'{{"id":{key}}}'.encode()
        old = expected.get(key)
        if old is None:  # an insert, or a deleted key coming back
            op = "c"
            expected[key] = _row(key, rng, ts, None)
            value = _event(op, None, expected[key], lsn, ts)
        elif rng.random() < DELETE_SHARE:
            op = "d"
            del expected[key]
            # REPLICA IDENTITY DEFAULT: `before` of a delete holds the primary key only.
            value = _event(op, (key, *nulls), None, lsn, ts)
        else:
            op = "u"
            expected[key] = _row(key, rng, ts, old)
            value = _event(op, None, expected[key], lsn, ts)  # REPLICA IDENTITY DEFAULT: no `before`
        ops[op] += 1
        yield record_key, value
        if op == "d":
            yield record_key, None


def produce(node: Any, topic: str, changes: int, keys: int, seed: int, partitions: int) -> Changes:
    """Produce the change events once, keyed (the producer's murmur2 partitioner, as Debezium's records get),
    and check that the log holds exactly what was sent."""
    from kafka_spark.client import KafkaClient, Producer
    from kafka_spark.client.metadata import TopicPartition

    node.create_topic(topic, partitions=partitions,
                      configs={"segment.bytes": 1 << 30, "retention.ms": -1, "retention.bytes": -1})
    data = Changes(topic, changes, keys, seed)
    # Idempotence keeps each partition's records in the order sent, retries included: the order is the truth.
    conf = {"bootstrap.servers": node.bootstrap, "linger.ms": 10, "batch.size": 65536, "acks": "all",
            "enable.idempotence": True, "buffer.memory": 64 << 20}
    began = time.perf_counter()
    with Producer(conf) as producer:
        sent, chunk_keys, chunk_values = [], [], []
        for key, value in events(changes, keys, seed, data.expected, data.ops):
            chunk_keys.append(key)
            chunk_values.append(value)
            data.value_bytes += len(value or b"")
            if len(chunk_keys) == PRODUCE_CHUNK:
                sent.append(producer.send_many(topic, chunk_values, keys=chunk_keys))
                chunk_keys, chunk_values = [], []
        if chunk_keys:
            sent.append(producer.send_many(topic, chunk_values, keys=chunk_keys))
        data.records = sum(s.get() for s in sent)
        producer.flush()
    data.produce_s = time.perf_counter() - began
    with KafkaClient({"bootstrap.servers": node.bootstrap}) as client:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        starts, ends = client.earliest_offsets(tps), client.latest_offsets(tps)
    data.ranges = {tp.partition: (starts[tp], ends[tp]) for tp in tps}
    held = sum(e - s for s, e in data.ranges.values())
    if held != data.records:
        raise SystemExit(f"{topic}: produced {data.records} records, the log holds {held}")
    return data


# ---- contenders -----------------------------------------------------------------------------------------

def check_table(spark: Any, table: str, data: Changes) -> dict[str, Any]:
    """The table's rows against the expected state, exactly; RuntimeError naming the first differences."""
    df = spark.read.format("delta").load(table)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise RuntimeError(f"{table}: no column(s) {missing}; it has {df.columns}")
    arrow = df.select(*COLUMNS).toArrow()
    got = {row[0]: row for row in zip(*(arrow.column(c).to_pylist() for c in COLUMNS), strict=True)}
    seen = {"rows": arrow.num_rows, "quantity_sum": sum(r[5] or 0 for r in got.values()),
            "email_count": sum(r[2] is not None for r in got.values()), "extra_columns": sorted(
                set(df.columns) - set(COLUMNS))}
    wrong = sorted(k for k in got.keys() & data.expected.keys() if got[k] != data.expected[k])
    extra, lost = sorted(got.keys() - data.expected.keys()), sorted(data.expected.keys() - got.keys())
    if wrong or extra or lost or arrow.num_rows != len(got):
        first = wrong[:2]
        detail = "; ".join(f"id {k}: table {got[k]}, source {data.expected[k]}" for k in first)
        raise RuntimeError(f"{table}: {arrow.num_rows} rows ({arrow.num_rows - len(got)} duplicate keys), "
                           f"{len(wrong)} differ, {len(extra)} not in the source (e.g. {extra[:3]}), "
                           f"{len(lost)} missing (e.g. {lost[:3]}); {detail}")
    return seen


def _progress(query: Any, everyone: bool = False) -> dict[int, tuple[int, float]]:
    """Spark's record of each micro-batch that read records (`everyone`: of each micro-batch that ran):
    (records, triggerExecution seconds) by batch id."""
    out = {}
    for progress in query.recentProgress:
        p = json.loads(progress.json)
        if p.get("numInputRows") or (everyone and p.get("batchId") is not None and "addBatch" in p["durationMs"]):
            out[int(p["batchId"])] = (int(p["numInputRows"]), p["durationMs"]["triggerExecution"] / 1000)
    return out


def _finish(query: Any, name: str) -> None:
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"{name}: the query failed: {query.exception()}")


class Runner:
    """Runs contenders against one broker and one SparkSession."""

    def __init__(self, spark: Any, bootstrap: str) -> None:
        self.spark, self.bootstrap = spark, bootstrap

    def run(self, name: str, data: Changes, batch: int) -> Run:
        work = Path(tempfile.mkdtemp(prefix="cdc-bench-"))
        table = str(work / "table")
        try:
            if name == "spark-merge":
                run = self._spark_merge(data, batch, table, str(work / "checkpoint"))
            elif name in ("ours-direct", "ours-spark"):
                run = self._ours(data, batch, table, "auto" if name == "ours-direct" else "spark")
            else:
                raise ValueError(name)
            if run.records != data.records:
                raise RuntimeError(f"{name}: the query read {run.records} records, the topic holds {data.records}")
            run.check = check_table(self.spark, table, data)  # after the clock
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return run

    def _spark_merge(self, data: Changes, batch: int, table: str, checkpoint: str) -> Run:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType
        from pyspark.sql.window import Window

        spark, applied = self.spark, {}
        schema = StructType.fromDDL(VALUE_SCHEMA)
        assert isinstance(schema, StructType)
        started = time.perf_counter()
        # The pattern merges into an existing table: creating it is part of the user's run.
        DeltaTable.createIfNotExists(spark).location(table).addColumns(schema).execute()
        target = DeltaTable.forPath(spark, table)
        last = Window.partitionBy("id").orderBy(F.col("partition").desc(), F.col("offset").desc())

        def upsert(changes: Any, batch_id: int) -> None:
            began = time.perf_counter()
            latest = changes.withColumn("_n", F.row_number().over(last)).where("_n = 1")
            (target.alias("t").merge(latest.alias("s"), "t.id = s.id")
             .whenMatchedDelete(condition="s.op = 'd'")
             .whenMatchedUpdateAll()
             .whenNotMatchedInsertAll(condition="s.op != 'd'")
             .execute())
            applied[batch_id] = time.perf_counter() - began

        envelope = F.from_json(F.col("value").cast("string"), envelope_ddl()).alias("e")
        changes = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                   .option("subscribe", data.topic).option("startingOffsets", "earliest")
                   .option("maxOffsetsPerTrigger", str(batch)).load()
                   # The tombstone after a delete only lets compaction drop the key: the delete carries the change.
                   .where("value IS NOT NULL")
                   .select("partition", "offset", F.from_json(F.col("key").cast("string"), "id BIGINT").alias("k"),
                           envelope)
                   # The key comes from the record key: a delete's `after` is null.
                   .select(F.col("k.id").alias("id"), F.col("e.op").alias("op"), "partition", "offset",
                           *(F.col(f"e.after.{c}").alias(c) for c in COLUMNS[1:])))
        query = (changes.writeStream.foreachBatch(upsert).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        _finish(query, "spark-merge")
        seconds = time.perf_counter() - started
        progress = _progress(query)
        batches = [Batch(b, n, trigger, applied.get(b)) for b, (n, trigger) in sorted(progress.items())]
        return Run(seconds, sum(b.records for b in batches), batches)

    def _ours(self, data: Changes, batch: int, table: str, writer: str) -> Run:
        from kafka_spark.delta import start_stream
        from kafka_spark.sink import StreamOptions
        from kafka_spark.sink.results import LoadResult

        results: dict[int, LoadResult] = {}
        started = time.perf_counter()
        query = start_stream(self.spark, StreamOptions(
            table=table, kafka={"bootstrap.servers": self.bootstrap}, topics=[data.topic], sink_id="bench",
            cdc="debezium", value_schema=VALUE_SCHEMA, writer=writer, trigger="available-now",
            max_offsets_per_trigger=batch, on_commit=lambda b, r: results.__setitem__(b, r)))
        _finish(query, f"ours ({writer})")
        seconds = time.perf_counter() - started
        # Our sink reads a micro-batch's records itself where its writer can (Spark's numInputRows is then 0): a
        # batch's records are those its commit applied.
        progress = _progress(query, everyone=True)
        uncommitted = sorted(b for b, (n, _) in progress.items() if n and b not in results)
        if uncommitted:
            raise RuntimeError(f"ours ({writer}): micro-batches {uncommitted} read records but committed nothing")
        batches = [Batch(b, results[b].rows, trigger, results[b].seconds, results[b].writer)
                   for b, (_, trigger) in sorted(progress.items()) if b in results and results[b].rows]
        return Run(seconds, sum(b.records for b in batches), batches)


# ---- measuring ------------------------------------------------------------------------------------------

def measure(runner: Runner, data: Changes, batch: int, names: list[str], runs: int,
            save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every contender `runs` times, the order reversed on odd runs; a wrong table stops the bench."""
    done: dict[str, list[Run]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else names[::-1]:
            run = runner.run(name, data, batch)
            done[name].append(run)
            triggers = sorted(b.trigger_s for b in run.batches)
            log(f"  run {i + 1}/{runs} {name}: {run.seconds:.2f} s, {len(run.batches)} batches "
                f"(p50 {triggers[len(triggers) // 2]:.2f} s, max {triggers[-1]:.2f} s), table checked")
            save(summarize(done, data.changes))
    return summarize(done, data.changes)


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 changes over 10,000 keys")
    parser.add_argument("--changes", type=int, help="change events (default 1,000,000; quick 100,000)")
    parser.add_argument("--keys", type=int, help="keys of the source table (default 100,000; quick 10,000)")
    parser.add_argument("--batch", type=int, help="maxOffsetsPerTrigger (default 100,000; quick 10,000)")
    parser.add_argument("--runs", type=int, default=2, help="runs per contender (default 2)")
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help=f"default {PARTITIONS}")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--contenders", help=f"comma-separated subset of: {', '.join(BY_NAME)}")
    parser.add_argument("--warmup-rounds", type=int, default=WARMUP_ROUNDS,
                        help=f"unrecorded rounds of every contender on {WARMUP[0]:,} changes in batches of "
                             f"{WARMUP[2]:,} first (default {WARMUP_ROUNDS})")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    changes = args.changes or (100_000 if args.quick else 1_000_000)
    keys = args.keys or (10_000 if args.quick else 100_000)
    batch = args.batch or (10_000 if args.quick else 100_000)
    if keys > changes:
        parser.error("--keys: at most --changes (every key is inserted first)")
    names = chosen(parser, args.contenders, list(BY_NAME), [c.name for c in CONTENDERS])
    compile_package()

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    stamp = time.strftime("%Y%m%d-%H%M%S")
    began = time.monotonic()
    result: dict[str, Any] = {"meta": {
        "command": command("cdc_bench.py", argv),
        "when": time.strftime("%Y-%m-%d %H:%M"), "runs": args.runs, "batch": batch, "warmup_rounds": args.warmup_rounds,
        "value_schema": VALUE_SCHEMA,
        "machine": machine(), "load_before": _load(), "seconds": 0.0}, "data": None, "warmup": None, "results": {}}

    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        suffix = uuid.uuid4().hex[:6]
        log(f"producing {changes:,} changes over {keys:,} keys, and {WARMUP[0]:,} to warm up")
        data = produce(node, f"cdc-bench-{changes}-{suffix}", changes, keys, args.seed, args.partitions)
        warm = produce(node, f"cdc-bench-warmup-{suffix}", WARMUP[0], WARMUP[1], args.seed + 1, args.partitions)
        log(f"  {data.topic}: {data.records:,} records ({dict(data.ops)}), {data.value_bytes / 1e6:.0f} MB of "
            f"values, produced in {data.produce_s:.1f} s; {len(data.expected):,} rows at the end")
        result["data"], result["warmup"] = data.summary(), warm.summary()
        log("starting Spark")
        spark = local_spark("kafka-spark-cdc-bench", extra=SPARK_CONF)
        result["meta"]["cores"] = spark.sparkContext.defaultParallelism
        runner = Runner(spark, node.bootstrap)
        log(f"warming up: {args.warmup_rounds} round(s) over {WARMUP[0]:,} changes")
        for _ in range(args.warmup_rounds):
            for name in names:
                runner.run(name, warm, WARMUP[2])
        log(f"measuring {', '.join(names)}: batches of {batch:,}")

        def save(results: dict[str, Any]) -> None:
            result["results"] = results
            result["meta"]["seconds"] = time.monotonic() - began
            result["meta"]["load_after"] = _load()
            write(args.out, stamp, result)

        save(measure(runner, data, batch, names, args.runs, save))
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
    finish(write(args.out, stamp, result), markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""kafka-delta-ingest (delta-io's Rust daemon) beside kafka_spark's direct Delta writer: the same JSON records of
one local broker, parsed into the same columns, in the same run.

    .venv/bin/python bench/kdi_bench.py --kdi PATH                 # 1,000,000 records of ~1 KB; 10,000/s for 60 s
    .venv/bin/python bench/kdi_bench.py --kdi PATH --size 100      # ~100 B records
    .venv/bin/python bench/kdi_bench.py --records 50000 --seconds 20 --rate 2000    # a small check of both halves

`--kdi` (or $KDI_BIN, else `kafka-delta-ingest` on PATH) is a release build of github.com/delta-io/kafka-delta-ingest.

Records: JSON objects `{"id", "sent_ms", "user", "city", "amount", "note"}` (VALUE_SCHEMA; `note` is random hex
padding the object to --size bytes), produced by kafka_spark's producer with the Kafka timestamp = `sent_ms`.

1. Throughput: --records records in one topic (--partitions partitions); each contender loads the whole topic
   into an empty table of its own. kdi: `kafka-delta-ingest ingest` into a table created beforehand with
   VALUE_SCHEMA's columns, timed from starting the process to the commitInfo time of the version at which its
   table holds every record (its `--ends_at_latest_offsets` stops only once a record past the latest offsets
   arrives, so the bench watches the table's log and stops it). ours: `kafka_spark.delta.load` with
   `value_schema=VALUE_SCHEMA` and `writer="direct"` (rows and offsets in one commit), the call timed in a warm
   Spark session (local[2]). Both tables are checked: exactly ids 0..N-1, once each.
2. Time-to-table: a producer thread sends --rate records/s for --seconds, each stamped with its send time; kdi
   with `--allowed_latency 1` (its smallest in whole seconds but 0, which commits every record), ours
   `start_stream(trigger=--ours-trigger, writer="direct")` (default 0s: each micro-batch as soon as the last ends,
   Spark's default). One after the other, each on a
   topic of its own, or with --together at the same time on two topics fed with the same records. Each consumer
   starts --settle seconds (after it has its partitions) before the first record. Per record: the commitInfo time
   of the Delta version that first holds it minus its Kafka timestamp (p50/p99/max); our stream's own freshness
   (each commit's LoadResult) is reported beside it.

Writes bench/results/kdi-<stamp>.json and .md (and kdi-latest.*).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.installed import compile_package
from bench.kdi_report import LogTail, agreement, check_ids, time_to_table, write

VALUE_SCHEMA = "id BIGINT, sent_ms BIGINT, user STRING, city STRING, amount DOUBLE, note STRING"
CITIES = ("Lisbon", "Porto", "Oslo", "Turku", "Lyon", "Graz", "Cork", "Gdansk")
SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
CONTENDERS = ("kdi", "ours")
# Its CLI reads each of these from the environment when the flag is absent (clap `env`): generic names such as
# KAFKA_TOPIC, TRANSFORMS or APP_ID set for something else would silently change what it does.
KDI_ENV = ("KAFKA_TOPIC", "TABLE_LOCATION", "KAFKA_BROKERS", "KAFKA_CONSUMER_GROUP", "APP_ID", "KAFKA_SEEK_OFFSETS",
           "KAFKA_AUTO_OFFSET_RESET", "ALLOWED_LATENCY", "MAX_MESSAGES_PER_BATCH", "MIN_BYTES_PER_FILE", "TRANSFORMS",
           "DLQ_TABLE_LOCATION", "DLQ_TRANSFORMS", "WRITE_CHECKPOINTS", "STATSD_ENDPOINT", "JSON_REGISTRY",
           "AVRO_REGISTRY", "ENDS_AT_LATEST_OFFSETS", "DECOMPRESS_GZIP", "KAFKA_DELTA_INGEST_CERT",
           "KAFKA_DELTA_INGEST_KEY", "KAFKA_DELTA_INGEST_CA", "KAFKA_DELTA_INGEST_SCRAM_JSON")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def values(first: int, count: int, size: int, sent_ms: int) -> list[bytes]:
    """Records `first`..`first+count-1` as JSON of about `size` bytes, all sent at `sent_ms`."""
    out = []
    for i in range(first, first + count):
        head = (f'{{"id":{i},"sent_ms":{sent_ms},"user":"user-{i % 99991}","city":"{CITIES[i % len(CITIES)]}",'
                f'"amount":{i % 100003 / 100},"note":"')
        pad = max(size - len(head) - 2, 1)
        # random padding: a run of one letter would compress to nothing and flatter whoever writes more bytes
        out.append((head + os.urandom((pad + 1) // 2).hex()[:pad] + '"}').encode())
    return out


def create_topic(node, topic: str, partitions: int) -> None:  # node: kafka_spark.local.KafkaNode
    node.tools.create_topic(topic, partitions=partitions,
                            configs={"segment.bytes": 1 << 30, "retention.ms": -1, "retention.bytes": -1})


def topic_records(bootstrap: str, topic: str, partitions: int) -> int:
    from kafka_spark.client import KafkaClient
    from kafka_spark.client.metadata import TopicPartition

    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        starts, ends = client.earliest_offsets(tps), client.latest_offsets(tps)
    return sum(ends[tp] - starts[tp] for tp in tps)


def produce_all(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    from kafka_spark.client import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, "batch.size": 65536, "acks": 1}) as producer:
        for first in range(0, records, 10_000):
            stamp = int(time.time() * 1000)
            producer.send_many(topic, values(first, min(10_000, records - first), size, stamp), timestamp_ms=stamp)
        producer.flush()
    held = topic_records(bootstrap, topic, partitions)
    if held != records:
        raise SystemExit(f"{topic}: sent {records} records, the log holds {held}")


class Feed(threading.Thread):
    """Sends `rate` records a second for `seconds` to every topic of `topics` (the same records to each), each
    stamped with the wall clock as it is sent: Kafka timestamp = `sent_ms`."""

    def __init__(self, bootstrap: str, topics: list[str], rate: int, seconds: float, size: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topics, self.rate, self.seconds, self.size = bootstrap, topics, rate, seconds, size
        self.sent, self.behind_ms, self.error = 0, 0.0, None

    def run(self) -> None:
        from kafka_spark.client import Producer

        try:
            with Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5}) as producer:
                began = time.monotonic()
                while (elapsed := time.monotonic() - began) < self.seconds:
                    due = int(elapsed * self.rate)
                    if due > self.sent:
                        # how late the oldest record of this send is against the schedule
                        self.behind_ms = max(self.behind_ms, (elapsed - self.sent / self.rate) * 1000)
                        stamp = int(time.time() * 1000)
                        batch = values(self.sent, due - self.sent, self.size, stamp)
                        for topic in self.topics:
                            producer.send_many(topic, batch, timestamp_ms=stamp)
                        self.sent = due
                    time.sleep(0.005)
                producer.flush()
        except BaseException as exc:  # reported by the main thread
            self.error = exc


class Kdi:
    """kafka-delta-ingest processes (`workers` in one consumer group, as its docs scale it) writing one table."""

    def __init__(self, binary: str, args: argparse.Namespace, bootstrap: str, logs: Path) -> None:
        self.binary, self.args, self.bootstrap, self.logs = binary, args, bootstrap, logs
        self.env = {k: v for k, v in os.environ.items() if k not in KDI_ENV} | {"RUST_LOG": "info"}

    def flags(self, latency: int) -> list[str]:
        # statsd: 127.0.0.1, where nothing listens (UDP, so nothing waits on it)
        return ["--allowed_latency", str(latency), "--max_messages_per_batch", str(self.args.kdi_batch),
                "--min_bytes_per_file", str(self.args.kdi_min_bytes), "--auto_offset_reset", "earliest",
                "--statsd_endpoint", "127.0.0.1:8125", *self.args.kdi_arg]

    @staticmethod
    def create_table(table: Path) -> None:
        """The empty table it needs before it starts (it takes the schema from the table): VALUE_SCHEMA's columns."""
        import pyarrow as pa
        from deltalake import write_deltalake

        schema = pa.schema([("id", pa.int64()), ("sent_ms", pa.int64()), ("user", pa.string()), ("city", pa.string()),
                            ("amount", pa.float64()), ("note", pa.string())])
        write_deltalake(str(table), schema.empty_table())

    def start(self, topic: str, table: Path, latency: int, name: str) -> list[subprocess.Popen]:
        group = f"kdi-{name}-{time.time_ns()}"  # a fresh group and app id: no offsets from an earlier run
        cmd = [self.binary, "ingest", topic, str(table), "--kafka", self.bootstrap, "--consumer_group", group,
               "--app_id", group, *self.flags(latency)]
        procs = []
        for w in range(self.args.kdi_workers):
            with open(self.logs / f"{name}-{w}.log", "wb") as out:
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                              stdin=subprocess.DEVNULL))
        return procs

    def assigned(self, name: str) -> bool:
        """Whether every worker has been given its partitions (its log's rebalance line)."""
        return all("POST_REBALANCE - Assign" in (self.logs / f"{name}-{w}.log").read_text(errors="replace")
                   for w in range(self.args.kdi_workers))

    def failure(self, procs: list[subprocess.Popen], name: str) -> str | None:
        for w, proc in enumerate(procs):
            if proc.poll() is not None:
                tail = (self.logs / f"{name}-{w}.log").read_text(errors="replace")[-3000:]
                return f"kafka-delta-ingest worker {w} exited with {proc.returncode}:\n{tail}"
        return None

    @staticmethod
    def stop(procs: list[subprocess.Popen]) -> None:
        for proc in procs:  # it has no clean stop: whatever it committed is in the table, the rest is dropped
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_rows(tail: LogTail, want: int, timeout: float, failed: Any = None) -> None:
    """Until the table holds `want` rows; `failed()` names a reason to give up (a dead process)."""
    deadline = time.monotonic() + timeout
    while tail.poll() < want:
        reason = failed() if failed else None
        if reason:
            raise RuntimeError(reason)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{tail.table}: {tail.rows} of {want} rows after {timeout:.0f} s")
        time.sleep(0.2)
    if tail.rows != want:
        raise RuntimeError(f"{tail.table}: {tail.rows} rows, expected {want}")


def kdi_throughput(kdi: Kdi, topic: str, table: Path, want: int, timeout: float, run: int) -> dict[str, Any]:
    kdi.create_table(table)
    tail = LogTail(table)
    tail.poll()
    name = f"throughput-{run}"
    began = time.time()
    procs = kdi.start(topic, table, kdi.args.kdi_latency, name)
    try:
        wait_rows(tail, want, timeout, lambda: kdi.failure(procs, name))
    finally:
        kdi.stop(procs)
    done = tail.reached(want)
    assert done is not None
    return {"seconds": done.timestamp_ms / 1000 - began, "seen_s": time.time() - began, "tail": tail}


def ours_throughput(spark, bootstrap: str, topic: str, table: Path, want: int) -> dict[str, Any]:
    from kafka_spark.delta import load
    from kafka_spark.sink import LoadOptions

    began = time.time()
    result = load(spark, LoadOptions(table=str(table), kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                     sink_id="bench", writer="direct", value_schema=VALUE_SCHEMA))
    seconds = time.time() - began
    if result.writer != "direct" or result.rows != want:
        raise RuntimeError(f"ours: {result.summary()}")
    tail = LogTail(table)
    tail.poll()
    done = tail.reached(want)
    return {"seconds": seconds, "to_commit_s": done.timestamp_ms / 1000 - began if done else None, "tail": tail}


def throughput(node, spark, kdi: Kdi | None, args: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    topic = f"kdi-bench-{args.size}b-{args.records}-{int(time.time())}"
    create_topic(node, topic, args.partitions)
    log(f"producing {args.records:,} records of ~{args.size} B to {topic}")
    produce_all(node.bootstrap, topic, args.records, args.size, args.partitions)
    out = []
    for run in range(1, args.runs + 1):
        order = [c for c in CONTENDERS if c in args.contenders]
        for contender in order if run % 2 else order[::-1]:  # neither side always first
            table = scratch / f"throughput-{contender}-{run}"
            if contender == "kdi":
                assert kdi is not None
                row = kdi_throughput(kdi, topic, table, args.records, args.timeout, run)
            else:
                row = ours_throughput(spark, node.bootstrap, topic, table, args.records)
            tail = row.pop("tail")
            row |= {"contender": contender, "run": run, "records": args.records, "shape": tail.shape(),
                    "check": check_ids(tail, "id" if contender == "kdi" else "data.id", args.records)}
            out.append(row)
            log(f"throughput {contender} run {run}: {row['seconds']:.2f} s, "
                f"{args.records / row['seconds']:,.0f} records/s, {row['shape']}, ids ok: {row['check']['ok']}")
            shutil.rmtree(table, ignore_errors=True)
    return out


def start_ours(spark, bootstrap: str, topic: str, table: Path, commits: list[dict[str, Any]], trigger: str = "1s"):
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import StreamOptions

    def record(_batch: int, result) -> None:
        commits.append({"version": result.table_version, "rows": result.rows, "writer": result.writer,
                        "freshness": result.freshness.summary() if result.freshness else None})

    return start_stream(spark, StreamOptions(
        table=str(table), kafka={"bootstrap.servers": bootstrap}, topics=[topic], sink_id="bench",
        checkpoint=str(table.parent / f"{table.name}-checkpoint"), trigger=trigger, starting="earliest",
        writer="direct", value_schema=VALUE_SCHEMA, on_commit=record))


def latency(node, spark, kdi: Kdi | None, args: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    """Time-to-table of each contender: all of them at once with --together, else one after the other."""
    names = [c for c in CONTENDERS if c in args.contenders]
    groups = [names] if args.together else [[n] for n in names]
    out = []
    for group in groups:
        stamp = int(time.time())
        topics = {c: f"kdi-latency-{c}-{stamp}" for c in group}
        tables = {c: scratch / f"latency-{c}" for c in group}
        running: dict[str, Any] = {}
        commits: list[dict[str, Any]] = []
        try:
            for c in group:
                create_topic(node, topics[c], args.partitions)
                if c == "kdi":
                    assert kdi is not None
                    kdi.create_table(tables[c])
                    running[c] = kdi.start(topics[c], tables[c], 1, "latency")
                else:
                    running[c] = start_ours(spark, node.bootstrap, topics[c], tables[c], commits, args.ours_trigger)
            ready_by = time.monotonic() + 120
            while not all(_ready(c, running[c], kdi) for c in group):
                if time.monotonic() > ready_by:
                    raise RuntimeError(f"{group}: not consuming after 120 s")
                time.sleep(0.2)
            time.sleep(args.settle)
            log(f"time-to-table {'+'.join(group)}: {args.rate:,} records/s for {args.seconds:.0f} s")
            feed = Feed(node.bootstrap, [topics[c] for c in group], args.rate, args.seconds, args.size)
            feed.start()
            feed.join()
            if feed.error is not None:
                raise RuntimeError(f"producer: {feed.error!r}")
            for c in group:
                failed = partial(kdi.failure, running["kdi"], "latency") if c == "kdi" and kdi else None
                wait_rows(LogTail(tables[c]), feed.sent, args.timeout, failed)
        finally:
            for c, handle in running.items():
                if c == "kdi":
                    Kdi.stop(handle)
                else:
                    handle.stop()
        for c in group:
            tail = LogTail(tables[c])
            tail.poll()
            nested = "" if c == "kdi" else "data."
            row = {"contender": c, "rate": args.rate, "seconds": args.seconds, "sent": feed.sent,
                   "producer_behind_ms": feed.behind_ms, "shape": tail.shape(),
                   "time_to_table": time_to_table(tail, f"{nested}sent_ms"),
                   "check": check_ids(tail, f"{nested}id", feed.sent)}
            if c == "ours":
                row |= {"commits": commits, "own_freshness": agreement(row["time_to_table"], commits)}
            t = row["time_to_table"]
            log(f"time-to-table {c}: p50 {t['p50_ms']:.0f} ms, p99 {t['p99_ms']:.0f} ms, max {t['max_ms']:.0f} ms "
                f"over {t['records']:,} records in {t['commits']} commits; ids ok: {row['check']['ok']}")
            out.append(row)
    return out


def _ready(contender: str, handle: Any, kdi: Kdi | None) -> bool:
    """A consumer has its partitions: kdi's rebalance logged; our query's first trigger done."""
    if contender == "kdi":
        assert kdi is not None
        reason = kdi.failure(handle, "latency")
        if reason:
            raise RuntimeError(reason)
        return kdi.assigned("latency")
    return handle.lastProgress is not None


def warm_up(spark, node, args: argparse.Namespace, scratch: Path) -> None:
    """JIT, class loading, Python workers and their imports (the JSON parser), for the load and for the stream."""
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import StreamOptions

    topic = f"kdi-bench-warm-{int(time.time())}"
    create_topic(node, topic, args.partitions)
    produce_all(node.bootstrap, topic, 20_000, args.size, args.partitions)
    ours_throughput(spark, node.bootstrap, topic, scratch / "warm-load", 20_000)
    start_stream(spark, StreamOptions(table=str(scratch / "warm-stream"), kafka={"bootstrap.servers": node.bootstrap},
                                      topics=[topic], sink_id="bench", checkpoint=str(scratch / "warm-checkpoint"),
                                      trigger="available-now", writer="direct",
                                      value_schema=VALUE_SCHEMA)).awaitTermination()
    for name in ("warm-load", "warm-stream", "warm-checkpoint"):
        shutil.rmtree(scratch / name, ignore_errors=True)


def kdi_identity(binary: str, given: str | None) -> dict[str, str]:
    """Its version (`--version`) and the commit it was built from: --kdi-commit, else the checkout the binary
    sits in (read-only `git rev-parse`), else unknown."""
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    commit = given
    if commit is None:
        found = subprocess.run(["git", "-C", str(Path(binary).resolve().parent), "rev-parse", "HEAD"],
                               capture_output=True, text=True)
        commit = found.stdout.strip() if found.returncode == 0 else "unknown (give --kdi-commit)"
    return {"binary": binary, "version": version, "commit": commit}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kdi", default=os.environ.get("KDI_BIN", "kafka-delta-ingest"),
                        help="the kafka-delta-ingest binary (default $KDI_BIN, else kafka-delta-ingest on PATH)")
    parser.add_argument("--kdi-commit", help="the commit it was built from, for the report (default: its checkout's)")
    parser.add_argument("--contenders", default="kdi,ours", help="kdi, ours or both (default kdi,ours)")
    parser.add_argument("--records", type=int, default=1_000_000, help="throughput records (default 1,000,000)")
    parser.add_argument("--size", type=int, default=1000, help="bytes per JSON record (default 1000; try 100)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1, help="throughput runs per contender, order alternating")
    parser.add_argument("--rate", type=int, default=10_000, help="records/s of the time-to-table test")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the time-to-table test")
    parser.add_argument("--ours-trigger", default="0s",
                        help="our stream's trigger in the time-to-table test (default 0s: back to back)")
    parser.add_argument("--together", action="store_true", help="time-to-table of both at once, on two topics")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between a consumer's start and the feed")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--kdi-workers", type=int, default=1, help="kafka-delta-ingest processes (one group)")
    parser.add_argument("--kdi-latency", type=int, default=1,
                        help="its --allowed_latency in the throughput test (the time-to-table test uses 1)")
    parser.add_argument("--kdi-batch", type=int, default=5000, help="its --max_messages_per_batch (its default)")
    parser.add_argument("--kdi-min-bytes", type=int, default=134_217_728,
                        help="its --min_bytes_per_file (its default)")
    parser.add_argument("--kdi-arg", action="append", default=[], help="one more argument for it (repeatable)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a table to fill")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if not args.contenders or set(args.contenders) - set(CONTENDERS):
        parser.error(f"--contenders: one or both of {', '.join(CONTENDERS)}")
    kdi_info: dict[str, Any] = {}
    if "kdi" in args.contenders:
        binary = shutil.which(args.kdi) or (args.kdi if Path(args.kdi).is_file() else None)
        if binary is None:
            parser.error(f"no kafka-delta-ingest binary at {args.kdi!r}: give --kdi PATH or set KDI_BIN")
        args.kdi = binary
        kdi_info = kdi_identity(binary, args.kdi_commit)
    compile_package()
    command = " ".join([".venv/bin/python bench/kdi_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {
        "command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "records": args.records, "size": args.size,
        "partitions": args.partitions, "value_schema": VALUE_SCHEMA, "runs": args.runs,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, load {os.getloadavg()[0]:.1f}",
        "latency_mode": "both at once, two topics, the same records" if args.together else "one after the other",
        "ours": {"throughput": "load(value_schema, writer=direct), Spark local[2]",
                 "stream": f"start_stream(trigger={args.ours_trigger}, writer=direct, value_schema)"}}}
    from kafka_spark.local import start_kafka

    scratch = Path(tempfile.mkdtemp(prefix="kdi-bench-"))
    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        kdi = None
        if kdi_info:
            (scratch / "logs").mkdir()
            kdi = Kdi(args.kdi, args, node.bootstrap, scratch / "logs")
            result["meta"]["kdi"] = kdi_info | {"workers": args.kdi_workers,
                                                "args": ["ingest", "TOPIC", "TABLE", *kdi.flags(args.kdi_latency)]}
        if "ours" in args.contenders:
            from kafka_spark.local.spark import local_spark

            log("starting Spark")
            spark = local_spark("kafka-spark-kdi-bench", extra=SPARK_CONF)
            warm_up(spark, node, args, scratch)
        if not args.no_throughput:
            result["throughput"] = throughput(node, spark, kdi, args, scratch)
        if not args.no_latency:
            result["latency"] = latency(node, spark, kdi, args, scratch)
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)
    path = write(result, args.out, time.strftime("%Y%m%d-%H%M%S"))
    print()
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

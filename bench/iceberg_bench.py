"""Kafka -> Apache Iceberg side by side: the sink's Iceberg load (its direct writer and pyiceberg's) and Spark's own
Kafka source with an Iceberg append through Apache Iceberg's Spark runtime, on the same topics of one local broker,
in the same run.

    .venv/bin/python bench/iceberg_bench.py              # 1,000,000 records of 100 B and of 1 KB, 2 runs
    .venv/bin/python bench/iceberg_bench.py --quick      # 100,000 records, 1 run
    .venv/bin/python bench/iceberg_bench.py --records 300000 --runs 1
    .venv/bin/python bench/iceberg_bench.py --streams    # also the streams: ours-stream, spark-stream

Each case's topic (8 partitions, no compression, null keys) is filled once by Kafka's ProducerPerformance
(bench/cases.py). The contenders, each into a fresh table every run, checked after the clock (rows = records,
every offset of every partition once):

- `ours`: `kafka_spark.iceberg.load` with the default writer (the direct one: each Spark task writes Parquet, one
  Iceberg snapshot with the offsets) into the embedded catalog (pyiceberg's SQL catalog on SQLite) of a fresh
  warehouse, on this environment's Spark; timed from the call to its return (the table's creation included);
- `ours-pyiceberg`: the same with `writer="pyiceberg"`;
- `spark`: `spark.read.format("kafka")` (Spark's connector, the jars `kafka_spark.local.jars` fetches for PySpark
  4.1.4) with the topic's offsets as `startingOffsets` / `endingOffsets`, then `.writeTo("bench.db.<t>").append()`
  into a Hadoop catalog on local disk (`org.apache.iceberg.spark.SparkCatalog`, `type=hadoop`). Iceberg 1.12's
  runtime is built for Spark 4.1, not this environment's PySpark, so this side runs in a process of its own: the
  tests' cached PySpark 4.1.4 environment (tests/integration/compat/spark_envs.py, as
  tests/integration/iceberg/test_spark_iceberg_reader.py uses it) running this file with `--spark-child`, one
  Spark session for every run. Its empty table is created before the clock; the clock runs from the read's start
  to the append's end, measured in that process.

With `--streams` (off by default), two stream contenders as well, each into a fresh table (and checkpoint) every
run, checked the same way:

- `ours-stream`: `kafka_spark.iceberg.start_stream(spark, StreamOptions(..., trigger="available-now"), catalog)`
  then `awaitTermination()`, timed from the call to the query's end (the table's creation included);
- `spark-stream`: in the PySpark 4.1 process, `spark.readStream.format("kafka")` from the topic's first offsets
  (`startingOffsets`), `.writeStream.format("iceberg").trigger(availableNow=True)` with a fresh
  `checkpointLocation`, `.toTable("bench.db.s_<id>")` then `awaitTermination()`; its empty table is created
  before the clock, which runs from `readStream` to the query's end.

Every contender does one untimed load of a 20,000-record topic first (JIT, Python workers, class loading); the
order of the contenders is reversed on every other run. Prints a Markdown table per value size (median seconds,
records/s, and the time ratio to `spark`, for the streams to `spark-stream`: > 1× is faster than Spark);
`--out FILE` also writes the results as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
SIZES = (100, 1000)
PARTITIONS = 8
PYSPARK = "4.1.4"  # the newest Spark that Iceberg 1.12 has a runtime for (iceberg-spark-runtime-4.1_2.13)
ICEBERG_EXTRAS = ("iceberg",)  # the tests' PySpark 4.1 environment (they run the sink's Iceberg code there too)
PEER = "spark"
STREAM_PEER = "spark-stream"
# Spark's Kafka connector and what it needs beyond Spark itself, from the local jar cache of PySpark 4.1.4.
CONNECTOR_JARS = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-")
KAFKA_COLUMNS = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
                 "timestampType INT")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def check(name: str, groups: dict[int, tuple[int, int, int, int]], ranges: dict[int, tuple[int, int]]) -> int:
    """`groups`: partition -> (rows, distinct offsets, min offset, max offset) of a table; RuntimeError unless it
    holds every offset of `ranges` (partition -> [start, end)) exactly once. The table's row count."""
    for p, (start, end) in ranges.items():
        want = (end - start, end - start, start, end - 1)
        got = groups.get(p, (0, 0, None, None))
        if end > start and tuple(got) != want:
            raise RuntimeError(f"{name}: partition {p} holds (rows, distinct offsets, min, max) {tuple(got)}, "
                               f"expected {want}")
    extra = set(groups) - set(ranges)
    if extra:
        raise RuntimeError(f"{name}: rows of partitions {sorted(extra)} that the topic does not have")
    return sum(g[0] for g in groups.values())


def offsets_json(topic: str, ranges: dict[int, tuple[int, int]], end: bool) -> str:
    return json.dumps({topic: {str(p): r[1] if end else r[0] for p, r in ranges.items()}})


# ---------------------------------------------------------------------------------------------------------------
# Spark's side, in the PySpark 4.1 environment: `iceberg_bench.py --spark-child SPEC.json`. No kafka_spark here.

def spark_child(spec_path: str) -> None:
    """One Spark session with Iceberg's runtime and Spark's Kafka connector; a JSON request a line on stdin
    (`{"topic", "ranges", "bootstrap", "stream"}`), a JSON answer a line on stdout (`{"seconds", "rows"}` or
    `{"error"}`). `stream`: a readStream -> writeStream AvailableNow query instead of a batch append."""
    spec = json.loads(Path(spec_path).read_text())
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    warehouse = spec["warehouse"]
    builder = (SparkSession.builder.master("local[2]").appName("iceberg-bench-spark")
               .config("spark.jars", ",".join(spec["jars"]))
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(Path(warehouse) / "spark-warehouse"))
               .config("spark.sql.catalog.bench", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.bench.type", "hadoop")
               .config("spark.sql.catalog.bench.warehouse", warehouse))
    for key, value in spec["conf"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench.db")
    out = sys.stdout
    out.write(json.dumps({"ready": spark.version}) + "\n")
    out.flush()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            stream = bool(req.get("stream"))
            name = STREAM_PEER if stream else PEER
            run_id = uuid.uuid4().hex[:8]
            table = f"bench.db.{'s' if stream else 't'}_{run_id}"
            checkpoint = Path(warehouse) / "_checkpoints" / run_id
            ranges = {int(p): tuple(r) for p, r in req["ranges"].items()}
            try:
                spark.sql(f"CREATE TABLE {table} ({KAFKA_COLUMNS}) USING iceberg")
                began = time.perf_counter()
                if stream:
                    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", req["bootstrap"])
                             .option("subscribe", req["topic"])
                             .option("startingOffsets", offsets_json(req["topic"], ranges, end=False)).load()
                             .writeStream.format("iceberg").outputMode("append").trigger(availableNow=True)
                             .option("checkpointLocation", str(checkpoint)).toTable(table))
                    query.awaitTermination()
                else:
                    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", req["bootstrap"])
                          .option("subscribe", req["topic"])
                          .option("startingOffsets", offsets_json(req["topic"], ranges, end=False))
                          .option("endingOffsets", offsets_json(req["topic"], ranges, end=True)).load())
                    df.writeTo(table).append()
                seconds = time.perf_counter() - began
                rows = (spark.table(table).groupBy("partition")
                        .agg(F.count("*"), F.countDistinct("offset"), F.min("offset"), F.max("offset")).collect())
                groups = {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}
                answer: dict[str, Any] = {"seconds": seconds, "rows": check(name, groups, ranges)}
            except Exception as e:  # reported to the parent, which raises it
                answer = {"error": f"{type(e).__name__}: {e}"[:4000]}
            finally:
                spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
                shutil.rmtree(checkpoint, ignore_errors=True)
            out.write(json.dumps(answer) + "\n")
            out.flush()
    finally:
        spark.stop()


# ---------------------------------------------------------------------------------------------------------------
# This side: the environment of the PySpark 4.1 process, and the contenders.

def pyspark41_python() -> Path:
    """The tests' cached PySpark 4.1.4 environment's interpreter (tests/integration/compat/spark_envs.py): used as
    it is when built; built by `spark_env` otherwise (which also uninstalls kafka-spark from it: never while the
    compat tests run)."""
    sys.path[:0] = [str(REPO / "tests" / "integration" / "compat"), str(REPO / "tests")]
    from spark_envs import env_dir, spark_env  # type: ignore[import-not-found]

    venv = env_dir(PYSPARK, ICEBERG_EXTRAS)
    if (venv / ".complete").exists():
        return venv / "bin" / "python"
    log(f"building the PySpark {PYSPARK} environment (once; minutes)")
    with tempfile.TemporaryDirectory() as scratch:
        return spark_env(PYSPARK, Path(scratch), ICEBERG_EXTRAS)


def spark_child_jars() -> list[str]:
    """Iceberg's Spark runtime for 4.1 (the tests' artifact set `iceberg`) and Spark 4.1's Kafka connector."""
    from harness.fetch import ensure  # type: ignore[import-not-found]

    from kafka_spark.local.jars import cache_dir

    runtime = sorted(ensure("iceberg").glob("iceberg-spark-runtime-4.1_2.13-*.jar"))
    if not runtime:
        raise RuntimeError("no iceberg-spark-runtime-4.1_2.13 jar in the tests' `iceberg` artifact set")
    dirs = sorted((cache_dir() / "jars").glob(f"spark-{PYSPARK}*"))
    found = {prefix: sorted(p for d in dirs for p in d.glob(f"{prefix}*.jar")) for prefix in CONNECTOR_JARS}
    missing = [prefix for prefix, jars in found.items() if not jars]
    if missing:
        raise RuntimeError(f"Spark {PYSPARK}'s Kafka connector jars are not in {cache_dir() / 'jars'} "
                           f"(missing {missing}): run a local Spark session under PySpark {PYSPARK} once "
                           "(e.g. the compat tests) so that kafka_spark.local.jars fetches them")
    return [str(runtime[-1]), *(str(jars[-1]) for jars in found.values())]


class SparkSide:
    """The PySpark 4.1 process: started once, one load per request."""

    def __init__(self, scratch: Path) -> None:
        python = pyspark41_python()
        spec = scratch / "spark-child.json"
        spec.write_text(json.dumps({"jars": spark_child_jars(), "warehouse": str(scratch / "spark-warehouse"),
                                    "conf": SPARK_CONF}))
        # That environment's interpreter runs Spark's Python side; this one's paths and Spark must not leak in.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
        env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve()), "--spark-child", str(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=scratch)
        ready = self._answer()
        log(f"Spark's side: PySpark {ready['ready']} (pid {self.proc.pid})")

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the PySpark {PYSPARK} process exited ({self.proc.wait()}); its stderr is above")
            if line.startswith("{"):
                answer = json.loads(line)
                if "error" in answer:
                    raise RuntimeError(f"Spark's side: {answer['error']}")
                return answer

    def load(self, bootstrap: str, topic: str, ranges: dict[int, tuple[int, int]],
             stream: bool = False) -> tuple[float, int]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"bootstrap": bootstrap, "topic": topic, "stream": stream,
                                          "ranges": {str(p): r for p, r in ranges.items()}}) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        return answer["seconds"], answer["rows"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


Load = Callable[[str, dict[int, tuple[int, int]]], tuple[float, int]]


def our_contender(spark, bootstrap: str, scratch: Path, writer: str | None, stream: bool = False) -> Load:
    """`kafka_spark.iceberg.load` (or, `stream`, `start_stream` with an AvailableNow trigger and
    `awaitTermination`) into a fresh embedded catalog: (seconds, rows checked)."""
    import pyarrow.compute as pc

    from kafka_spark.iceberg import IcebergCatalog, load, start_stream
    from kafka_spark.sink import LoadOptions, StreamOptions

    name = "ours-stream" if stream else "ours" if writer is None else f"ours-{writer}"

    def run(topic: str, ranges: dict[int, tuple[int, int]]) -> tuple[float, int]:
        warehouse = scratch / f"ours-{uuid.uuid4().hex[:8]}"
        catalog = IcebergCatalog(warehouse=str(warehouse))
        common: dict[str, Any] = dict(table="bench.t", kafka={"bootstrap.servers": bootstrap}, topics=[topic],
                                      sink_id="bench", **({} if writer is None else {"writer": writer}))
        try:
            if stream:
                writers: set[str] = set()
                options = StreamOptions(**common, trigger="available-now",
                                        on_commit=lambda _batch, result: writers.add(result.writer))
                began = time.perf_counter()
                start_stream(spark, options, catalog).awaitTermination()
                seconds = time.perf_counter() - began
                assert writers == {writer or "direct"}, writers
            else:
                began = time.perf_counter()
                result = load(spark, LoadOptions(**common), catalog)
                seconds = time.perf_counter() - began
                assert result.writer == (writer or "direct"), result.summary()
            rows = catalog.open().load_table("bench.t").scan(selected_fields=("partition", "offset")).to_arrow()
            by = rows.group_by("partition").aggregate([("offset", "count"), ("offset", "count_distinct"),
                                                       ("offset", "min"), ("offset", "max")])
            groups = {r["partition"]: (r["offset_count"], r["offset_count_distinct"], r["offset_min"],
                                       r["offset_max"]) for r in by.to_pylist()}
            assert pc.sum(by["offset_count"]).as_py() == rows.num_rows
            return seconds, check(name, groups, ranges)
        finally:
            shutil.rmtree(warehouse, ignore_errors=True)
    return run


def settle(spark) -> None:
    """Outside the clock: wait (at most 30 s) until this session's cached blocks are gone (Spark unpersists
    asynchronously), then a full GC, so one contender's cached 1 GB read does not meet the next one's in the 2 GB
    driver (a 1 KB `ours-pyiceberg` right after `ours-stream` ran out of heap without this)."""
    sc = spark.sparkContext
    deadline = time.monotonic() + 30
    while len(sc._jsc.sc().getRDDStorageInfo()) and time.monotonic() < deadline:
        time.sleep(0.2)
    sc._jvm.System.gc()


def markdown(result: dict[str, Any]) -> str:
    """A table per value size: median seconds, records/s and the ratio to `spark` (its time over ours), for the
    stream contenders to `spark-stream`."""
    meta = result["meta"]
    lines = [f"`{meta['command']}` — {meta['when']}, {meta['runs']} run(s) each, {meta['records']:,} records per "
             f"case, {PARTITIONS} partitions; load: {meta['uptime']}"]
    for case in result["cases"]:
        streams = any(name.endswith("-stream") for name in case["seconds"])
        ratio_head = "× spark (streams: × spark-stream)" if streams else "× spark"
        lines += ["", f"{case['size']} B values:", "",
                  f"| contender | median s | records/s | {ratio_head} |", "|---|---|---|---|"]
        for name, times in case["seconds"].items():
            peer = case["seconds"].get(STREAM_PEER if name.endswith("-stream") else PEER)
            median = statistics.median(times)
            ratio = f"{statistics.median(peer) / median:.2f}×" if peer else "—"
            lines.append(f"| {name} | {median:.2f} | {case['records'] / median:,.0f} | {ratio} |")
    return "\n".join(lines) + "\n"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 run")
    parser.add_argument("--records", type=int, help="records per case (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per contender and case (default 2; quick 1)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="value sizes in bytes (default 100,1000)")
    parser.add_argument("--contenders", help="a comma-separated subset of: ours, ours-pyiceberg, spark "
                        "(and, with --streams, ours-stream, spark-stream)")
    parser.add_argument("--streams", action="store_true",
                        help="also the stream contenders: ours-stream (start_stream, AvailableNow) and spark-stream "
                        "(readStream -> writeStream.format('iceberg'), availableNow)")
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--spark-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.spark_child:
        spark_child(args.spark_child)
        return 0

    from bench.cases import Case, produce
    from bench.installed import compile_package

    compile_package()
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (1 if args.quick else 2)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    default = f"ours,ours-pyiceberg,{PEER}" + (f",ours-stream,{STREAM_PEER}" if args.streams else "")
    wanted = [c.strip() for c in (args.contenders or default).split(",") if c.strip()]
    known = {"ours", "ours-pyiceberg", PEER} | ({"ours-stream", STREAM_PEER} if args.streams else set())
    if set(wanted) - known:
        parser.error(f"unknown contenders {sorted(set(wanted) - known)} (streams need --streams)")
    command = " ".join([".venv/bin/python bench/iceberg_bench.py", *(sys.argv[1:] if argv is None else argv)])
    result: dict[str, Any] = {"meta": {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs,
                                       "records": records, "partitions": PARTITIONS, "uptime": uptime()},
                              "cases": []}

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    log("starting Kafka and Spark")
    node = start_kafka(secure=False, heap="1g")
    scratch = Path(tempfile.mkdtemp(prefix="kafka-spark-iceberg-bench-"))
    spark, side = None, None
    try:
        spark = local_spark("kafka-spark-iceberg-bench", extra=SPARK_CONF)
        loads: dict[str, Load] = {}
        if "ours" in wanted:
            loads["ours"] = our_contender(spark, node.bootstrap, scratch, None)
        if "ours-pyiceberg" in wanted:
            loads["ours-pyiceberg"] = our_contender(spark, node.bootstrap, scratch, "pyiceberg")
        if "ours-stream" in wanted:
            loads["ours-stream"] = our_contender(spark, node.bootstrap, scratch, None, stream=True)
        if PEER in wanted or STREAM_PEER in wanted:
            side = SparkSide(scratch)
        if PEER in wanted:
            loads[PEER] = lambda topic, ranges: side.load(node.bootstrap, topic, ranges)
        if STREAM_PEER in wanted:
            loads[STREAM_PEER] = lambda topic, ranges: side.load(node.bootstrap, topic, ranges, stream=True)
        warm = produce(node, Case(100, "none", PARTITIONS, 20_000))
        for name, run in loads.items():  # JIT, Python workers, class loading: not recorded
            seconds, _ = run(warm.case.topic, warm.ranges)
            settle(spark)
            log(f"warm-up: {name} {seconds:.2f} s")
        for size in sizes:
            data = produce(node, Case(size, "none", PARTITIONS, records))
            log(f"{data.case.topic}: {data.records:,} records of {size} B")
            times: dict[str, list[float]] = {name: [] for name in loads}
            for r in range(runs):
                order = list(loads.items()) if r % 2 == 0 else list(reversed(loads.items()))
                for name, run in order:
                    seconds, rows = run(data.case.topic, data.ranges)
                    if rows != data.records:
                        raise RuntimeError(f"{name}: the table holds {rows} rows, expected {data.records}")
                    times[name].append(seconds)
                    settle(spark)
                    log(f"{size} B run {r + 1}: {name} {seconds:.2f} s ({rows:,} rows, every offset once)")
            result["cases"].append({"size": size, "records": data.records, "seconds": times})
    finally:
        if side is not None:
            side.close()
        if spark is not None:
            spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)
    table = markdown(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

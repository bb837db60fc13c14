"""Streams side by side: readStream.format("pykafka") against Spark's format("kafka"), on one broker.

    .venv/bin/python bench/stream_bench.py               # 1,000,000 records per case, 3 runs
    .venv/bin/python bench/stream_bench.py --quick       # 100,000 records, 1 run, shorter latency test

1. AvailableNow throughput: each case's topic (8 partitions, 100 B and 1 KB values) is read to the end,
   in one micro-batch (no limit) and in micro-batches of each --limits value, into the noop sink and
   into Delta (ours: start_stream, offsets in each commit, with Spark's writer and with the direct one
   (`writer="direct"`: the tasks write the Parquet files, delta-rs commits); Spark's:
   writeStream.format("delta")), a fresh checkpoint and table each run, ours and Spark's alternating.
   Timed from defining the stream (load()) to the query's end.
2. End-to-end latency into Delta: a producer writes --rate records/s stamped with the wall clock for
   --seconds; each row's latency is its Delta commit's time minus its Kafka timestamp (p50/p95/max), for
   start_stream (Spark's writer, then the direct one) and for Spark's source writing Delta plainly, all
   with Spark's default trigger (the next micro-batch as soon as the last one ends).
   Beside each one-micro-batch case, two floors: the same rows from a Python source that only hands Spark
   ready-made Arrow batches (bench/ceiling_source.py), written to the same sink in one batch job, and the
   same source read as a stream (AvailableNow, one micro-batch, timed like ours from load()). The batch
   floor bounds any Python source, so Spark's time over it is the largest ratio any can reach; the stream
   floor adds what Spark's stream machinery costs any Python stream source (its planner process, the
   offset and commit logs), so ours against it is what our stream reader itself costs.
   Every run's Spark timings (query progress durationMs, summed over micro-batches) go in the JSON.
3. Driver cost per trigger on a topic with 1,000 partitions: the reader's latestOffset + partitions
   calls (what Spark runs on the driver for every micro-batch), median of --triggers calls.

Writes bench/results/stream-<stamp>.json and .md (and stream-latest.*).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cases import Case, Dataset, produce
from bench.ceiling_source import register as register_ceiling
from bench.installed import compile_package

SPARK_CONF = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"}
SPARK_MS = ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets",
            "triggerExecution")
CASES = ((100, "none", 8), (1000, "none", 8))


def stream_floor_source():
    """The DataSource class of `format("arrow-ceiling-stream")`: arrow-ceiling's rows as a stream source that
    does no other work, all of them in one micro-batch (offsets {"rows": n}). Defined in a function so that
    it is pickled by value, whether this file runs as a script or is imported."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    from bench.ceiling_source import ArrowCeiling

    class FloorStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, batch: Any) -> None:
            self.batch = batch

        def initialOffset(self) -> dict:
            return {"rows": 0}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def latestOffset(self, start: dict, limit: Any) -> dict:
            return {"rows": self.batch.rows}

        def partitions(self, start: dict, end: dict) -> list[InputPartition]:
            return self.batch.partitions() if end["rows"] > start["rows"] else []

        def read(self, partition: InputPartition) -> Any:
            return self.batch.read(partition)

    class ArrowCeilingStream(DataSource):
        @classmethod
        def name(cls) -> str:
            return "arrow-ceiling-stream"

        def schema(self) -> str:
            return ArrowCeiling(self.options).schema()

        def streamReader(self, schema: object) -> DataSourceStreamReader:
            return FloorStreamReader(ArrowCeiling(self.options).reader(schema))

    return ArrowCeilingStream


def register_stream_floor(spark) -> None:
    """Make `format("arrow-ceiling-stream")` available in `spark` (after `register_ceiling`, whose module it uses)."""
    spark.dataSource.register(stream_floor_source())


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# Our stream into Delta: start_stream with each writer ("pykafka" is Spark's writer, "direct" the direct one).
WRITERS = {"pykafka": "spark", "direct": "direct"}


def run_query(spark, fmt: str, sink: str, topic: str, bootstrap: str, limit: int | None, work: Path
              ) -> tuple[float, int, dict[str, int]]:
    """One AvailableNow run to the end of `topic`; (seconds, rows, Spark's durationMs summed over micro-batches)."""
    work.mkdir(parents=True, exist_ok=True)
    checkpoint, table = work / "checkpoint", work / "table"
    started = time.perf_counter()
    if sink == "delta" and fmt in WRITERS:
        from kafka_spark.delta import start_stream
        from kafka_spark.sink import StreamOptions

        rows: list[int] = []
        query = start_stream(spark, StreamOptions(
            table=str(table), kafka={"bootstrap.servers": bootstrap}, topics=[topic], checkpoint=str(checkpoint),
            trigger="available-now", max_offsets_per_trigger=limit or None, writer=WRITERS[fmt],
            on_commit=lambda _b, r: rows.append(r.rows)))
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        return seconds, sum(rows), durations(query)
    reader = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    df = (reader.option("maxOffsetsPerTrigger", str(limit)) if limit else reader).load()
    return stream_to(df, sink, work, started)


def stream_to(df, sink: str, work: Path, started: float) -> tuple[float, int, dict[str, int]]:
    """`df` (a stream) into `sink` with AvailableNow; (seconds since `started`, rows, durationMs summed)."""
    writer = (df.writeStream.format(sink).option("checkpointLocation", str(work / "checkpoint"))
              .trigger(availableNow=True))
    query = writer.start(str(work / "table")) if sink == "delta" else writer.start()
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return seconds, sum(p.numInputRows for p in query.recentProgress), durations(query)


def durations(query) -> dict[str, int]:
    """Spark's own timings of a query (progress durationMs: latestOffset, queryPlanning, getBatch, addBatch,
    walCommit, commitOffsets, triggerExecution), summed over its micro-batches, plus their number."""
    out: dict[str, int] = {"batches": len(query.recentProgress)}
    for progress in query.recentProgress:
        for key, ms in json.loads(progress.json).get("durationMs", {}).items():
            out[key] = out.get(key, 0) + int(ms)
    return out


def median_durations(runs: list[dict[str, int]]) -> dict[str, float]:
    keys = sorted({k for r in runs for k in r})
    return {k: statistics.median(r.get(k, 0) for r in runs) for k in keys}


def floor_run(spark, data: Dataset, sink: str, work: Path) -> float:
    """Seconds for the Python-source ceiling's rows of `data` into `sink` (a plain Delta append for delta)."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    df = (spark.read.format("arrow-ceiling").option("partitions", data.case.partitions)
          .option("rows", data.records).option("size", data.case.size).load())
    writer = df.write.format(sink).mode("append")
    if sink == "delta":
        writer.save(str(work / "table"))
    else:
        writer.save()
    return time.perf_counter() - started


def stream_floor_run(spark, data: Dataset, sink: str, work: Path) -> tuple[float, dict[str, int]]:
    """Seconds (and Spark's timings) for the floor's rows of `data` read as a stream into `sink`, like run_query."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    df = (spark.readStream.format("arrow-ceiling-stream").option("partitions", data.case.partitions)
          .option("rows", data.records).option("size", data.case.size).load())
    seconds, rows, spent = stream_to(df, sink, work, started)
    if rows != data.records:
        raise RuntimeError(f"stream floor->{sink} yielded {rows} rows, expected {data.records}")
    return seconds, spent


def throughput(spark, datasets: list[Dataset], bootstrap: str, runs: int, limits: list[int | None]
               ) -> list[dict[str, Any]]:
    out = []
    for data, sink, limit in ((d, s, lim) for d in datasets for lim in limits for s in ("noop", "delta")):
        # Without a limit the no-work stream source runs in the same rotation: its time against ours is only
        # fair when both met the same load.
        ours_fmts = ("pykafka", "direct") if sink == "delta" else ("pykafka",)
        fmts = (*ours_fmts, "kafka", "floor") if limit is None else (*ours_fmts, "kafka")
        times: dict[str, list[float]] = {f: [] for f in fmts}
        spent: dict[str, list[dict[str, int]]] = {f: [] for f in fmts}
        for i in range(runs):
            for fmt in fmts if i % 2 == 0 else fmts[::-1]:
                work = Path(tempfile.mkdtemp(prefix="stream-bench-"))
                try:
                    if fmt == "floor":
                        seconds, timings = stream_floor_run(spark, data, sink, work)
                        rows = data.records
                    else:
                        seconds, rows, timings = run_query(spark, fmt, sink, data.case.topic, bootstrap, limit, work)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                if rows != data.records:
                    raise RuntimeError(f"{fmt}->{sink} read {rows} rows of {data.case.topic}, "
                                       f"expected {data.records}")
                times[fmt].append(seconds)
                spent[fmt].append(timings)
                log(f"  {data.case.name} {fmt}->{sink} limit {limit or 'none'} run {i + 1}/{runs}: {seconds:.2f} s "
                    f"{timings}")
        ours, theirs = statistics.median(times["pykafka"]), statistics.median(times["kafka"])
        row = {"case": data.case.name, "records": data.records, "sink": sink, "limit": limit,
               "pykafka_s": ours, "kafka_s": theirs, "ratio": theirs / ours, "runs": times,
               "spark_ms": {f: median_durations(v) for f, v in spent.items()}, "spark_ms_runs": spent}
        if "direct" in times:
            direct = statistics.median(times["direct"])
            row |= {"direct_s": direct, "direct_ratio": theirs / direct}
        if limit is None:
            stream_floor = statistics.median(times["floor"])
            # each run's own ratio, so that a load change between runs does not skew it
            shares = [f / o for f, o in zip(times["floor"], times["pykafka"], strict=True)]
            floors = []
            for _ in range(runs):
                work = Path(tempfile.mkdtemp(prefix="stream-floor-"))
                try:
                    floors.append(floor_run(spark, data, sink, work))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            row |= {"floor_s": min(floors), "max_ratio": theirs / min(floors), "stream_floor_s": stream_floor,
                    "stream_floor_share": statistics.median(shares)}
            log(f"  {data.case.name} floor->{sink}: batch {min(floors):.2f} s (best of {runs}), stream "
                f"{stream_floor:.2f} s (median); pykafka at {row['stream_floor_share']:.0%} of the stream floor")
        out.append(row)
    return out


class Feed(threading.Thread):
    """Produces `rate` records a second for `seconds`, each stamped with the wall clock."""

    def __init__(self, bootstrap: str, topic: str, rate: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.rate, self.seconds = bootstrap, topic, rate, seconds
        self.sent = 0

    def run(self) -> None:
        from kafka_spark.client import Producer

        tick = 0.05
        with Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5}) as producer:
            began = time.monotonic()
            while time.monotonic() - began < self.seconds:
                due = int((time.monotonic() - began) * self.rate)
                while self.sent < due:
                    producer.send(self.topic, b"x" * 100, timestamp_ms=int(time.time() * 1000))
                    self.sent += 1
                time.sleep(tick)
            producer.flush()


def latency(spark, node, rate: int, seconds: float) -> list[dict[str, Any]]:
    """Per-row Delta commit time minus Kafka timestamp, for both sources writing Delta, default trigger."""
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import StreamOptions

    out = []
    for fmt in ("pykafka", "direct", "kafka"):
        topic = f"latency-{fmt}-{int(time.time())}"
        node.tools.create_topic(topic, partitions=4)
        work = Path(tempfile.mkdtemp(prefix="stream-latency-"))
        table = str(work / "table")
        try:
            if fmt in WRITERS:
                query = start_stream(spark, StreamOptions(
                    table=table, kafka={"bootstrap.servers": node.bootstrap}, topics=[topic],
                    checkpoint=str(work / "checkpoint"), trigger="0s", starting="earliest", writer=WRITERS[fmt]))
            else:
                query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", node.bootstrap)
                         .option("subscribe", topic).option("startingOffsets", "earliest").load()
                         .writeStream.format("delta").option("checkpointLocation", str(work / "checkpoint"))
                         .start(table))
            feed = Feed(node.bootstrap, topic, rate, seconds)
            feed.start()
            feed.join()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and _rows(spark, table) < feed.sent:
                time.sleep(0.5)
            query.stop()
            lat = _latencies(spark, table)
            if len(lat) != feed.sent:
                raise RuntimeError(f"{fmt}: {len(lat)} rows in the table, {feed.sent} produced")
            q = statistics.quantiles(lat, n=100)
            out.append({"source": fmt, "rate": rate, "seconds": seconds, "records": len(lat),
                        "p50_ms": q[49], "p95_ms": q[94], "max_ms": max(lat)})
            log(f"  latency {fmt}: p50 {q[49]:.0f} ms, p95 {q[94]:.0f} ms over {len(lat):,} records")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out


def _rows(spark, table: str) -> int:
    try:
        return spark.read.format("delta").load(table).count()
    except Exception:
        return 0


def _latencies(spark, table: str) -> list[float]:
    """Each row's commit time (the Delta version holding it) minus its Kafka timestamp, in ms."""
    from delta.tables import DeltaTable

    history = {r["version"]: r["timestamp"].timestamp() * 1000
               for r in DeltaTable.forPath(spark, table).history().select("version", "timestamp").collect()}
    rows = (spark.read.format("delta").load(table)
            .selectExpr("_metadata.file_path AS f", "CAST(unix_millis(timestamp) AS DOUBLE) AS ts").collect())
    file_version = _file_versions(table)
    return [history[file_version[Path(r["f"]).name]] - r["ts"] for r in rows]


def _file_versions(table: str) -> dict[str, int]:
    """Data file name -> the Delta version that added it, from the commit files."""
    out = {}
    for commit in sorted(Path(table, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                out[Path(action["add"]["path"]).name] = int(commit.stem)
    return out


def trigger_cost(node, partitions: int, triggers: int) -> dict[str, Any]:
    """Median driver time of one trigger's planning (latestOffset + partitions) on `partitions` partitions."""
    from kafka_spark.spark.source.options import parse_source_options
    from kafka_spark.spark.source.stream import KafkaStreamReader

    topic = f"wide-{partitions}-{int(time.time())}"
    node.tools.create_topic(topic, partitions=partitions)
    node.tools.produce_perf(topic, partitions * 10, 100)
    reader = KafkaStreamReader(parse_source_options({
        "kafka.bootstrap.servers": node.bootstrap, "subscribe": topic, "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": str(partitions * 2)}, "stream"))
    start = reader.initialOffset()
    limit = reader.getDefaultReadLimit()
    times = []
    try:
        for _ in range(triggers):
            began = time.perf_counter()
            end = reader.latestOffset(start, limit)
            reader.partitions(start, end)
            times.append(time.perf_counter() - began)
            start = end
    finally:
        reader.stop()
    result = {"partitions": partitions, "triggers": triggers, "median_ms": statistics.median(times) * 1000,
              "max_ms": max(times) * 1000}
    log(f"  trigger planning on {partitions} partitions: median {result['median_ms']:.1f} ms")
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# Streams ({result['meta']['when']}, {result['meta']['machine']})", "",
             f"`{result['meta']['command']}`", "",
             "| case | sink | offsets/trigger | pykafka s | kafka s | × kafka | direct s | × kafka (direct) "
             "| floor s | largest × | stream floor s | of stream floor |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["throughput"]:
        limit = f"{r['limit']:,}" if r["limit"] else "none (one micro-batch)"
        floor = (f"{r['floor_s']:.2f} | {r['max_ratio']:.2f} | {r['stream_floor_s']:.2f} | "
                 f"{r['stream_floor_share']:.0%}") if "floor_s" in r else "– | – | – | –"
        direct = f"{r['direct_s']:.2f} | {r['direct_ratio']:.2f}" if "direct_s" in r else "– | –"
        lines.append(f"| {r['case']} ({r['records']:,}) | {r['sink']} | {limit} | {r['pykafka_s']:.2f} | "
                     f"{r['kafka_s']:.2f} | {r['ratio']:.2f} | {direct} | {floor} |")
    lines += ["", "pykafka: start_stream with Spark's writer; direct: start_stream with writer=\"direct\" (Delta "
              "only). floor: the same rows from a Python source that does no work, into the same sink in one batch "
              "job; "
              "largest ×: kafka s / floor s, the most any Python stream source could reach. stream floor: that "
              "source read as a stream like ours (AvailableNow, one micro-batch, timed from load()); of stream "
              "floor: its time / ours, median of the runs' own ratios (100% = our reader costs nothing)."]
    lines += ["", "| case | sink | offsets/trigger | source | micro-batches | " + " | ".join(SPARK_MS) + " |",
              "|---|---|---:|---|---:|" + "---:|" * len(SPARK_MS)]
    for r in result["throughput"]:
        for source, ms in r["spark_ms"].items():
            lines.append(f"| {r['case']} | {r['sink']} | {r['limit'] or 'none'} | {source} | "
                         f"{ms.get('batches', 0):.0f} | " + " | ".join(f"{ms.get(k, 0):.0f}" for k in SPARK_MS) + " |")
    lines += ["", "Spark's timings in ms (query progress durationMs, summed over the micro-batches, median of the "
              "runs)."]
    lines += ["", "| latency into Delta, default trigger | rate | p50 ms | p95 ms | max ms |",
              "|---|---:|---:|---:|---:|"]
    for r in result["latency"]:
        lines.append(f"| {r['source']} | {r['rate']}/s | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | {r['max_ms']:.0f} |")
    cost = result["trigger_cost"]
    lines += ["", f"Driver planning per trigger on {cost['partitions']:,} partitions: median "
              f"{cost['median_ms']:.1f} ms, max {cost['max_ms']:.1f} ms ({cost['triggers']} triggers)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 run, 10 s latency test")
    parser.add_argument("--records", type=int, help="records per case (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per workload (default 3; quick 1)")
    parser.add_argument("--limits", default="none,250000",
                        help="maxOffsetsPerTrigger values to run, comma-separated; 'none' reads all in one micro-batch")
    parser.add_argument("--rate", type=int, default=1000, help="records/s for the latency test")
    parser.add_argument("--seconds", type=float, help="latency test length (default 30; quick 10)")
    parser.add_argument("--partitions", type=int, default=1000, help="partitions for the trigger-cost test")
    parser.add_argument("--triggers", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    compile_package()
    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (1 if args.quick else 3)
    seconds = args.seconds or (10.0 if args.quick else 30.0)

    import os
    import platform

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    result: dict[str, Any] = {"meta": {
        "command": " ".join([".venv/bin/python bench/stream_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "when": time.strftime("%Y-%m-%d %H:%M"), "records": records, "runs": runs,
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs"}}
    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        datasets = [produce(node, Case(size, codec, parts, records)) for size, codec, parts in CASES]
        # Both value sizes: the JVM compiles the 1 KB write path separately, and the first run would pay it.
        warms = [produce(node, Case(size, "none", 2, 20_000)) for size in (100, 1000)]
        log("starting Spark")
        spark = local_spark("kafka-spark-stream-bench", extra=SPARK_CONF)
        register_ceiling(spark)
        register_stream_floor(spark)
        for warm in warms:
            for fmt in ("pykafka", "direct", "kafka"):
                for sink in ("noop", "delta") if fmt != "direct" else ("delta",):
                    work = Path(tempfile.mkdtemp(prefix="stream-warm-"))
                    run_query(spark, fmt, sink, warm.case.topic, node.bootstrap, 10_000, work)
                    shutil.rmtree(work, ignore_errors=True)
            for sink in ("noop", "delta"):  # the floors' sources too: their first use pays the workers' imports
                for floor in (floor_run, stream_floor_run):
                    work = Path(tempfile.mkdtemp(prefix="stream-warm-"))
                    floor(spark, warm, sink, work)
                    shutil.rmtree(work, ignore_errors=True)
        log("throughput (AvailableNow)")
        limits = [None if x.strip().lower() == "none" else int(x) for x in args.limits.split(",")]
        result["throughput"] = throughput(spark, datasets, node.bootstrap, runs, limits)
        log("latency into Delta")
        result["latency"] = latency(spark, node, args.rate, seconds)
        log("driver cost per trigger")
        result["trigger_cost"] = trigger_cost(node, args.partitions, args.triggers)
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    text = markdown(result)
    for name in (f"stream-{stamp}", "stream-latest"):
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
        (args.out / f"{name}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

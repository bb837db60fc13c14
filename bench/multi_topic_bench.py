"""Many small topics into one Delta table each: one routed query against one query per topic, same run.

    .venv/bin/python bench/multi_topic_bench.py                    # 10 and 100 topics, 200 records of 100 B each
    .venv/bin/python bench/multi_topic_bench.py --topics 10,100,500 --records 100

For each topic count, fresh topics (one partition) are filled once; then, each into fresh tables:
- `routed stream`: `start_stream` with a `Routing` over the topics' pattern, AvailableNow;
- `separate queries`: one single-table `start_stream` per topic, all started together, AvailableNow;
- `routed load`: `load_tables` over the same pattern (a batch load, for reference);
- `routed stream direct` / `routed load direct`: the same with `writer="direct"` (one read job writes every
  table's files, delta-rs commits them).
`--skip` leaves contenders out (e.g. `--skip "separate queries"` at 500 topics).
Reported per contender: wall seconds, records/s, Spark jobs (those of the queries' job groups, or of the
load's), and for the routed runs the per-trigger seconds and driver seconds (CPU of the driver's Python
process) from `MultiLoadResult`. Writes bench/results/multi-topic-<stamp>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESULTS = Path(__file__).resolve().parent / "results"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fill(bootstrap: str, topics: list[str], records: int, size: int) -> None:
    from kafka_spark.client.cluster import Cluster
    from kafka_spark.client.producer.producer import Producer
    from kafka_spark.client.topics import NewTopic, create_topics

    with Cluster({"bootstrap.servers": bootstrap}) as cluster:
        for i in range(0, len(topics), 50):
            create_topics(cluster, [NewTopic(t, 1) for t in topics[i:i + 50]])
    value = b"x" * size
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 20}) as producer:
        for topic in topics:
            for _ in range(records):
                producer.send(topic, value)
        producer.flush()


def jobs_of(spark, groups: list[str]) -> int:
    tracker = spark.sparkContext.statusTracker()
    return sum(len(tracker.getJobIdsForGroup(g)) for g in groups)


def routed_stream(spark, bootstrap: str, pattern: str, lake: Path, writer: str = "spark") -> dict[str, Any]:
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import Routing, StreamOptions

    triggers: list[Any] = []
    opts = StreamOptions(kafka={"bootstrap.servers": bootstrap}, pattern=pattern, sink_id="bench",
                         routing=Routing(template=f"{lake}/{{topic}}"), trigger="available-now",
                         on_trigger=lambda _, r: triggers.append(r), writer=writer)
    began = time.perf_counter()
    query = start_stream(spark, opts)
    query.awaitTermination()
    seconds = time.perf_counter() - began
    rows = sum(r.rows for r in triggers)
    return {"seconds": seconds, "rows": rows, "jobs": jobs_of(spark, [str(query.runId)]), "triggers": len(triggers),
            "trigger_seconds": [round(r.seconds, 3) for r in triggers],
            "driver_seconds": [round(r.driver_seconds, 3) for r in triggers],
            "tables_per_trigger": [len(r.committed) for r in triggers]}


def separate_queries(spark, bootstrap: str, topics: list[str], lake: Path) -> dict[str, Any]:
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import StreamOptions

    began = time.perf_counter()
    queries = [start_stream(spark, StreamOptions(table=str(lake / t), kafka={"bootstrap.servers": bootstrap},
                                                 topics=[t], sink_id=f"bench-{i}", trigger="available-now"))
               for i, t in enumerate(topics)]
    for q in queries:
        q.awaitTermination()
    seconds = time.perf_counter() - began
    rows = sum(p.numInputRows for q in queries for p in q.recentProgress)
    return {"seconds": seconds, "rows": rows, "jobs": jobs_of(spark, [str(q.runId) for q in queries]),
            "triggers": sum(len(q.recentProgress) for q in queries)}


def routed_load(spark, bootstrap: str, pattern: str, lake: Path, writer: str = "spark") -> dict[str, Any]:
    from kafka_spark.delta import load_tables
    from kafka_spark.sink import LoadOptions, Routing

    group = f"bench-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.setJobGroup(group, "routed load")
    began = time.perf_counter()
    result = load_tables(spark, LoadOptions(kafka={"bootstrap.servers": bootstrap}, pattern=pattern, sink_id="bench",
                                            routing=Routing(template=f"{lake}/{{topic}}"), writer=writer))
    seconds = time.perf_counter() - began
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return {"seconds": seconds, "rows": result.rows, "jobs": jobs_of(spark, [group]), "triggers": 1,
            "trigger_seconds": [round(result.seconds, 3)], "driver_seconds": [round(result.driver_seconds, 3)],
            "tables_per_trigger": [len(result.committed)]}


def markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| topics | contender | seconds | records/s | Spark jobs | triggers | per trigger s (max) | "
             "driver s per trigger (max) |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        per = r.get("trigger_seconds") or []
        drv = r.get("driver_seconds") or []
        lines.append(f"| {r['topics']} | {r['contender']} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:.0f} | "
                     f"{r['jobs']} | {r['triggers']} | {max(per) if per else '-'} | {max(drv) if drv else '-'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", default="10,100")
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--skip", action="append", default=[], help="a contender to leave out (repeatable)")
    args = parser.parse_args()
    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    scratch = Path(tempfile.mkdtemp(prefix="multi-topic-bench-"))
    node = start_kafka(scratch / "kafka", secure=False)
    spark = local_spark("multi-topic-bench", extra={"spark.ui.retainedJobs": "100000",
                                                    "spark.sql.shuffle.partitions": "2"})
    results: list[dict[str, Any]] = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        for n in (int(x) for x in args.topics.split(",")):
            prefix = f"mt{n}-{uuid.uuid4().hex[:6]}"
            topics = [f"{prefix}-{i:04d}" for i in range(n)]
            log(f"{n} topics x {args.records} records of {args.size} B")
            fill(node.bootstrap, topics, args.records, args.size)
            want = n * args.records
            pattern = f"^{prefix}-"
            contenders = {
                "routed stream": lambda lake, p=pattern: routed_stream(spark, node.bootstrap, p, lake),
                "separate queries": lambda lake, t=topics: separate_queries(spark, node.bootstrap, t, lake),
                "routed load": lambda lake, p=pattern: routed_load(spark, node.bootstrap, p, lake),
                "routed stream direct": lambda lake, p=pattern: routed_stream(spark, node.bootstrap, p, lake, "direct"),
                "routed load direct": lambda lake, p=pattern: routed_load(spark, node.bootstrap, p, lake, "direct"),
            }
            for name, run in contenders.items():
                if name in args.skip:
                    continue
                lake = scratch / f"{prefix}-{name.replace(' ', '-')}"
                out = run(lake)
                if out["rows"] != want:
                    raise RuntimeError(f"{name}: {out['rows']} rows, expected {want}")
                results.append({"topics": n, "contender": name, **out})
                log(f"  {name}: {out['seconds']:.1f}s, {want / out['seconds']:.0f} records/s, {out['jobs']} jobs")
                shutil.rmtree(lake, ignore_errors=True)
                RESULTS.mkdir(exist_ok=True)
                (RESULTS / f"multi-topic-{stamp}.json").write_text(json.dumps(results, indent=1))
                (RESULTS / f"multi-topic-{stamp}.md").write_text(markdown(results))
        print(markdown(results))
    finally:
        spark.stop()
        node.discard()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

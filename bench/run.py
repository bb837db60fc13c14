"""Side-by-side benchmarks of kafka_spark against its peers, on one local broker and the same data.

    .venv/bin/python bench/run.py                 # every case, 1,000,000 records, 3 runs each
    .venv/bin/python bench/run.py --quick         # 2 cases at 100,000 records, 2 runs (< 5 min)
    .venv/bin/python bench/run.py --cases 1000b-none-8p --workloads pykafka-noop,kafka-noop

Starts Kafka from kafka_spark.local, produces each case's topic once with Kafka's
ProducerPerformance, then times every workload on it, alternating ours and the peers run by run.
Writes <out>/<stamp>.json and <out>/<stamp>.md (and latest.json / latest.md).
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import report
from bench.cases import QUICK_NAMES, SCALING_NAME, Case, Dataset, all_cases, produce, select
from bench.installed import compile_package
from bench.workloads import BY_NAME, WORKLOADS, Runner, Sample, work_dir

SPARK_CONF = {
    # The driver JVM also runs the executor threads and the JVM connector's consumers.
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "2",
}
SCALE_WORKLOADS = ("pykafka-noop", "kafka-noop", "client-ours")
# kafka-python reads ~0.04 M records/s here: one run per case keeps a full run within hours.
SLOW_PEERS = ("kafka-python", "decoder-kafka-python")
WARMUP = Case(100, "none", 2, 20_000)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def measure_case(runner: Runner, data: Dataset, names: list[str], runs: int, slow_runs: int) -> dict[str, Any]:
    """Every workload `runs` times (`slow_runs` for SLOW_PEERS), the order reversed on odd runs so no
    one always goes first."""
    samples: dict[str, list[Sample]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else list(reversed(names)):
            if name in SLOW_PEERS and i >= slow_runs:
                continue
            sample = runner.run(name, data)
            if sample.records != data.records:
                raise RuntimeError(f"{name} read {sample.records} records of {data.case.topic}, "
                                   f"expected {data.records}")
            if sample.payload_bytes and name != "consumer-perf" and sample.payload_bytes != data.case.payload_bytes:
                raise RuntimeError(f"{name} read {sample.payload_bytes} payload bytes of {data.case.topic}, "
                                   f"expected {data.case.payload_bytes}")
            samples[name].append(sample)
            log(f"  {data.case.name} run {i + 1}/{runs} {name}: {sample.seconds:.2f} s"
                f"{'' if sample.rss_worker_mb is None else f', worker RSS {sample.rss_worker_mb:.0f} MB'}")
    results = {n: report.summarize(s) for n, s in samples.items()}
    report.add_ratios(results)
    return {**data.summary(), "workloads": results}


def measure_scaling(runner: Runner, data: Dataset, small: int, runs: int) -> dict[str, Any]:
    """The first `small` records against the whole topic (4x), same workloads interleaved."""
    start, end = data.ranges[0]
    ranges = {"small": {0: (start, start + small)}, "large": {0: (start, end)}}
    samples: dict[tuple[str, str], list[Sample]] = {}
    for i in range(runs):
        for name in SCALE_WORKLOADS:
            for size in ("small", "large") if i % 2 == 0 else ("large", "small"):
                sample = runner.run(name, data, ranges[size])
                samples.setdefault((name, size), []).append(sample)
                log(f"  scaling run {i + 1}/{runs} {name} {size}: {sample.seconds:.2f} s")
    return {"case": data.case.name, "records": [small, end - start],
            "workloads": {n: [report.summarize(samples[(n, "small")]), report.summarize(samples[(n, "large")])]
                          for n in SCALE_WORKLOADS}}


def write(out: Path, stamp: str, result: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    text = report.markdown(result)
    for name in (stamp, "latest"):
        (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
        (out / f"{name}.md").write_text(text)
    return out / f"{stamp}.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 cases at 100,000 records, 2 runs; under 5 minutes")
    parser.add_argument("--cases", help="comma-separated patterns of case names, e.g. '1000b-.*-8p'")
    parser.add_argument("--records", type=int, help="records per case (default 1,000,000; quick 100,000)")
    parser.add_argument("--runs", type=int, help="runs per workload (default 3; quick 2)")
    parser.add_argument("--slow-runs", type=int, default=1, help=f"runs of {', '.join(SLOW_PEERS)} (default 1)")
    parser.add_argument("--workloads", help=f"comma-separated subset of: {', '.join(BY_NAME)}")
    parser.add_argument("--no-scaling", action="store_true", help="skip the n vs 4n records check")
    parser.add_argument("--profile", action="store_true",
                        help="write pyinstrument profiles of the out-of-Spark contenders next to the results")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    compile_package()

    records = args.records or (100_000 if args.quick else 1_000_000)
    runs = args.runs or (2 if args.quick else 3)
    cases = all_cases(records)
    if args.cases:
        cases = select(cases, args.cases)
    elif args.quick:
        cases = [c for c in cases if c.name in QUICK_NAMES]
    names = [w.name for w in WORKLOADS]
    if args.workloads:
        names = [n.strip() for n in args.workloads.split(",") if n.strip()]
        unknown = set(names) - set(BY_NAME)
        if unknown:
            parser.error(f"unknown workloads {sorted(unknown)}; known: {', '.join(BY_NAME)}")

    stamp = time.strftime("%Y%m%d-%H%M%S")
    began = time.monotonic()
    result: dict[str, Any] = {"meta": {
        "command": " ".join([".venv/bin/python bench/run.py", *map(shlex.quote, sys.argv[1:] if argv is None
                                                                       else argv)]),
        "when": time.strftime("%Y-%m-%d %H:%M"), "runs": runs, "slow_runs": min(args.slow_runs, runs),
        "records": records,
        "machine": f"{platform.machine()}, {_cpus()} CPUs, Python {platform.python_version()}",
        "seconds": 0.0}, "cases": [], "scaling": None}

    from kafka_spark.local import start_kafka
    from kafka_spark.local.spark import local_spark

    log("starting Kafka")
    node = start_kafka(secure=False, heap="1g")
    spark = None
    try:
        base = next(c for c in all_cases(records) if c.name == SCALING_NAME)
        scale_case = None if args.no_scaling else Case(base.size, base.codec, base.partitions, 4 * records)
        to_produce = [*cases, WARMUP, *([scale_case] if scale_case else [])]
        log(f"Kafka at {node.bootstrap}; producing {len(to_produce)} topics with ProducerPerformance")
        # Producing is not measured: overlapping the tools' JVM start-ups saves minutes.
        with ThreadPoolExecutor(max_workers=3) as pool:
            produced = list(pool.map(lambda c: produce(node, c), to_produce))
        for data in produced:
            log(f"  {data.case.topic}: {data.log_bytes / 1e6:.0f} MB in the log; {data.producer_report}")
        datasets = produced[:len(cases)]
        warmup = produced[len(cases)]
        scale_data = produced[-1] if scale_case else None
        log("starting Spark")
        spark = local_spark("kafka-spark-bench", extra=SPARK_CONF)
        from bench.rss import spark_jvm_pid

        runner = Runner(node, spark, spark_jvm_pid(), work_dir())
        if args.profile:
            runner.profile_dir = args.out / f"{stamp}-profiles"
            runner.profile_dir.mkdir(parents=True, exist_ok=True)
        # Warm-up, not recorded: JIT, Python workers, class loading (Kafka, Delta) on both sides.
        log("warming up")
        for name in ("pykafka-noop", "kafka-noop", "delta-kafka"):
            runner.run(name, warmup)

        for data in datasets:
            log(f"case {data.case.name} ({data.records:,} records)")
            result["cases"].append(measure_case(runner, data, names, runs, args.slow_runs))
            result["meta"]["seconds"] = time.monotonic() - began
            write(args.out, stamp, result)
        if scale_data is not None:
            log(f"scaling {scale_data.case.name}: {records:,} vs {4 * records:,} records")
            result["scaling"] = measure_scaling(runner, scale_data, records, runs)
    finally:
        if spark is not None:
            spark.stop()
        node.discard()
    result["meta"]["seconds"] = time.monotonic() - began
    path = write(args.out, stamp, result)
    print()
    print(report.markdown(result))
    log(f"wrote {path} and {path.with_suffix('.json')}")
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    sys.exit(main())

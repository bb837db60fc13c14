"""Resource soak: a `pykafka` stream into Delta for N minutes with a proxy fault every minute, sampling the
driver's and the Python workers' file descriptors, threads, sockets and RSS; then a check for growth.

    .venv/bin/python bench/soak.py                       # 20 minutes, a fault every 60 s, a sample every 5 s
    .venv/bin/python bench/soak.py --minutes 5 --out /tmp/soak

A local broker gets records from a producer thread (200 records/s over 4 partitions) while a
processing-time stream (trigger 2 s) reads them through a fault proxy into a Delta table. Every minute the
proxy resets every open connection and then injects one fault of the next kind in ALL_FAULTS on the
following requests (a stall of 3 s, a dripped, truncated or reset response, a reset request, a refused or
slow connection). Samples, taken from /proc, group the processes by role: the driver (this Python
process), the Spark JVM, and the Python workers under it (summed, with their count).

Writes `soak.csv` (one row per role and sample), `soak.png` (the four curves, faults marked) and
`soak.json` (settings, faults, row check, growth verdict) to --out (default bench/soak-results/). Growth
compares the mean of the last quarter of the run with the mean of the second quarter (the first quarter is
warm-up: JIT, caches, the workers' imports). Exits 1 if a resource grew past its allowance or the table is
not exactly the records produced (distinct (topic, partition, offset), checked with delta-rs).

The JVM's RSS alone cannot tell a leak from G1 committing heap regions it was always allowed: by default
the driver JVM starts with its whole heap (`-Xms` = `-Xmx`) touched up front (`-XX:+AlwaysPreTouch`), so
RSS growth after warm-up is memory outside the heap. `jstat -gc` adds the heap's used and committed MiB to
each JVM sample, and Native Memory Tracking's diff from the end of warm-up to the end of the run, by
category, is written to `nmt-diff.txt` (`--jvm-default` runs the JVM as before, without these).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# the fault proxy is test machinery (tests/harness), not part of the installed package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness.faults import ALL_FAULTS, FaultPlan, FaultyNetwork
from rss import python_descendants, spark_jvm_pid

from kafka_spark.client import KafkaClient, Producer
from kafka_spark.delta import start_stream
from kafka_spark.local import start_kafka
from kafka_spark.local.spark import local_spark
from kafka_spark.sink import StreamOptions

HERE = Path(__file__).parent
PARTITIONS = 4
METRICS = ("fds", "threads", "sockets", "rss_mb")
HEAP = ("heap_used_mb", "heap_committed_mb")
# growth allowed from the second quarter to the last: absolute slack + a fraction of the level
ALLOWANCE = {"fds": (16, 0.10), "threads": (8, 0.10), "sockets": (8, 0.10), "rss_mb": (64, 0.15)}
CLIENT = {"request.timeout.ms": "3000", "default.api.timeout.ms": "30000", "socket.connection.setup.timeout.ms": "3000",
          "retry.backoff.ms": "50", "retry.backoff.max.ms": "500", "reconnect.backoff.ms": "50",
          "reconnect.backoff.max.ms": "500"}


def proc_sample(pid: int) -> dict[str, float] | None:
    """fds, threads, sockets and RSS (MiB) of one process, or None if it is gone."""
    base = Path("/proc") / str(pid)
    try:
        fds = os.listdir(base / "fd")
        status = dict(line.split(":", 1) for line in (base / "status").read_text().splitlines() if ":" in line)
    except (OSError, ValueError):
        return None
    links = []
    for fd in fds:
        # closed meanwhile (the listing's own descriptor among them)
        with contextlib.suppress(OSError):
            links.append(os.readlink(base / "fd" / fd))
    return {"fds": len(links), "threads": int(status["Threads"]),
            "sockets": sum(x.startswith("socket:") for x in links), "rss_mb": int(status["VmRSS"].split()[0]) / 1024}


def jvm_heap(pid: int) -> dict[str, float]:
    """The JVM's heap used and committed (MiB) from `jstat -gc`; empty if jstat cannot attach."""
    try:
        out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=30).stdout
        names, values = (line.split() for line in out.strip().splitlines()[-2:])
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    gc = {n: float(v) for n, v in zip(names, values, strict=False)}
    spaces = ("S0", "S1", "E", "O")
    return {"heap_used_mb": sum(gc.get(f"{s}U", 0.0) for s in spaces) / 1024,
            "heap_committed_mb": sum(gc.get(f"{s}C", 0.0) for s in spaces) / 1024}


def native_memory(pid: int, command: str) -> str:
    """`jcmd PID VM.native_memory COMMAND` (baseline, summary.diff); the tool's text."""
    done = subprocess.run(["jcmd", str(pid), "VM.native_memory", command], capture_output=True, text=True,
                          timeout=60)
    return done.stdout + done.stderr


def sample_roles(jvm: int, heap: bool) -> dict[str, dict[str, float]]:
    """One sample per role: driver, JVM (with its heap if `heap`), and the Python workers summed."""
    out: dict[str, dict[str, float]] = {}
    for role, pid in (("driver", os.getpid()), ("jvm", jvm)):
        s = proc_sample(pid)
        if s is not None:
            out[role] = {**s, "processes": 1, **(jvm_heap(pid) if heap and role == "jvm" else {})}
    workers = [s for pid in python_descendants(jvm) if (s := proc_sample(pid)) is not None]
    out["workers"] = {m: sum(w[m] for w in workers) for m in METRICS} | {"processes": len(workers)}
    return out


class Feeder:
    """Numbered records at `rate` per second, straight to the broker, until stopped."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
        self.topic, self.rate, self.sent = topic, rate, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="soak-feeder", daemon=True)

    def _run(self) -> None:
        step = max(1, self.rate // 10)
        while not self.stop.wait(0.1):
            for _ in range(step):
                self.producer.send(self.topic, f'{{"n":{self.sent}}}'.encode(), key=str(self.sent % 97).encode())
                self.sent += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.producer.flush(60)
        self.producer.close()


def inject(net: FaultyNetwork, kind: str) -> FaultPlan:
    """Reset every open connection (so connection faults meet new ones), then one fault of `kind`."""
    plan = FaultPlan((kind,), probability=1.0, budget=1, stall_s=3, delay_s=1.0)
    net.set_plan(plan)
    for proxy in net.proxies:
        for link in list(proxy._links):
            link.close(reset=True)
    return plan


def native_total(diff: str) -> str:
    """The "Total:" line of an NMT summary diff (committed memory and its change since the baseline)."""
    return next((line.strip() for line in diff.splitlines() if line.strip().startswith("Total:")), "")


def growth(rows: list[dict], role: str, metric: str) -> tuple[float, float, bool]:
    """(mean of the 2nd quarter, mean of the last quarter, within the allowance)."""
    values = [r[metric] for r in rows if r["role"] == role and metric in r]
    q = max(1, len(values) // 4)
    early, late = statistics.fmean(values[q:2 * q]), statistics.fmean(values[-q:])
    slack, fraction = ALLOWANCE.get(metric, (0, 0.0))
    return early, late, late <= early + slack + fraction * early


def plot(rows: list[dict], faults: list[tuple[float, str]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    labels = {"fds": "open file descriptors", "threads": "threads", "sockets": "sockets", "rss_mb": "RSS (MiB)"}
    for ax, metric in zip(axes.flat, METRICS, strict=True):
        for role in ("driver", "jvm", "workers"):
            points = [(r["t_s"] / 60, r[metric]) for r in rows if r["role"] == role]
            ax.plot([p[0] for p in points], [p[1] for p in points], label=role)
        for t, _ in faults:
            ax.axvline(t / 60, color="grey", alpha=0.25, linewidth=0.8)
        ax.set_title(labels[metric])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("minutes (grey: a fault)")
    axes[0][0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def check_table(table: Path, bootstrap: str, topic: str) -> dict[str, int | bool]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["partition", "offset"]).to_pylist()
    keys = [(r["partition"], r["offset"]) for r in rows]
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        ends = client.latest_offsets(client.partitions(topic))
    expected = {(tp.partition, o) for tp, end in ends.items() for o in range(end)}
    return {"rows": len(keys), "distinct": len(set(keys)), "produced": len(expected),
            "exact": len(keys) == len(set(keys)) and set(keys) == expected}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--fault-every", type=float, default=60.0, help="seconds between faults")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--rate", type=int, default=200, help="records produced per second")
    parser.add_argument("--out", type=Path, default=HERE / "soak-results")
    parser.add_argument("--jvm-default", action="store_true",
                        help="the driver JVM as Spark starts it (heap grows on demand; no NMT, no jstat)")
    args = parser.parse_args(argv)
    accounted = not args.jvm_default
    nmt = ""
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kafka-spark-soak-"))
    topic, table = "soak", work / "table"
    broker = start_kafka(work / "kafka", secure=False)
    rows: list[dict] = []
    faults: list[tuple[float, str]] = []
    injected: dict[str, int] = {}
    try:
        broker.tools.create_topic(topic, partitions=PARTITIONS)
        spark = local_spark("kafka-spark-soak", extra=None if args.jvm_default else {
            "spark.driver.memory": "1g",
            "spark.driver.extraJavaOptions": "-Xms1g -XX:+AlwaysPreTouch -XX:NativeMemoryTracking=summary"})
        jvm = spark_jvm_pid()
        assert jvm is not None, "no Spark JVM under this process"
        feeder = Feeder(broker.bootstrap, topic, args.rate)
        feeder.thread.start()
        with FaultyNetwork([broker.bootstrap]) as net:
            query = start_stream(spark, StreamOptions(
                table=str(table), kafka={"bootstrap.servers": net.bootstrap, **CLIENT}, topics=[topic],
                sink_id="soak", starting="earliest", trigger="2s", max_offsets_per_trigger=5000))
            started = time.monotonic()
            next_fault, next_sample, kinds = started + args.fault_every, started, list(ALL_FAULTS)
            plan: FaultPlan | None = None
            baseline_at = started + args.minutes * 60 / 4 if accounted else None
            while (now := time.monotonic()) < started + args.minutes * 60:
                if query.exception() is not None:
                    raise RuntimeError(f"the stream failed: {query.exception()}")
                if baseline_at is not None and now >= baseline_at:
                    native_memory(jvm, "baseline")
                    baseline_at = None
                if now >= next_sample:
                    for role, s in sample_roles(jvm, accounted).items():
                        rows.append({"t_s": round(now - started, 1), "role": role, **s})
                    next_sample += args.sample_every
                if now >= next_fault:
                    if plan is not None:
                        for k, n in plan.injected.items():
                            injected[k] = injected.get(k, 0) + n
                    kind = kinds[len(faults) % len(kinds)]
                    plan = inject(net, kind)
                    faults.append((now - started, kind))
                    print(f"{(now - started) / 60:5.1f} min: fault {kind}; {feeder.sent} records produced", flush=True)
                    next_fault += args.fault_every
                time.sleep(0.2)
            if plan is not None:
                for k, n in plan.injected.items():
                    injected[k] = injected.get(k, 0) + n
            feeder.close()
            net.set_plan(FaultPlan())
            # let the stream catch up with the last records, then stop it
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                progress = query.lastProgress
                if progress and progress["numInputRows"] == 0 and check_table(table, broker.bootstrap, topic)["exact"]:
                    break
                time.sleep(2)
            query.stop()
        if accounted:
            nmt = native_memory(jvm, "summary.diff")
        rows_check = check_table(table, broker.bootstrap, topic)
        spark.stop()
    finally:
        broker.stop()

    verdict = {}
    for role in ("driver", "jvm", "workers"):
        for metric in METRICS:
            early, late, ok = growth(rows, role, metric)
            verdict[f"{role}.{metric}"] = {"second_quarter": round(early, 1), "last_quarter": round(late, 1), "ok": ok}
    with open(args.out / "soak.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t_s", "role", "processes", *METRICS, *HEAP], restval="")
        writer.writeheader()
        writer.writerows({k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    title = (f"pykafka stream into Delta, {args.minutes:g} min, a proxy fault every {args.fault_every:g} s "
             f"({len(faults)} faults), {rows_check['rows']} rows")
    plot(rows, faults, args.out / "soak.png", title)
    if nmt:
        (args.out / "nmt-diff.txt").write_text(nmt)
    heap = {m: growth(rows, "jvm", m)[:2] for m in HEAP if any(m in r for r in rows)}
    summary = {"minutes": args.minutes, "fault_every_s": args.fault_every, "sample_every_s": args.sample_every,
               "rate": args.rate, "faults": [k for _, k in faults], "injected": injected, "table": rows_check,
               "growth": verdict,
               "jvm_heap": {m: {"second_quarter": round(a, 1), "last_quarter": round(b, 1)}
                            for m, (a, b) in heap.items()},
               "jvm_native_total": native_total(nmt),
               "ok": rows_check["exact"] and all(v["ok"] for v in verdict.values())}
    (args.out / "soak.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""The report of bench/avro_bench.py: its contenders, the summary of their runs, the Markdown and JSON files; and
what bench/registry_bench.py (and the command lines of cdc_bench.py) share with it: the checked runs, their
summary, the table's rows and the files."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

PARTITIONS = 2


@dataclass(frozen=True)
class Contender:
    """A row of the report; `ref` marks its group's reference (Spark's from_avro, or Spark's own function)."""

    name: str
    group: str
    label: str
    ref: bool = False
    default: bool = True  # run unless --contenders names others


CONTENDERS = [
    Contender("pykafka-avro", "noop", 'format("pykafka") valueFormat=avro → noop'),
    Contender("kafka-from_avro", "noop", 'format("kafka") + from_avro → noop', ref=True),
    Contender("delta-ours", "delta", "kafka_spark.delta.load value_format=avro (offsets in the commit)"),
    Contender("delta-direct", "delta", 'the same with writer="direct" (tasks write Parquet, delta-rs commits)'),
    Contender("delta-from_avro", "delta", 'format("kafka") + from_avro + Delta append', ref=True),
    Contender("fastavro", "ceiling", "fastavro schemaless_reader alone, one process"),
    Contender("decode-batch", "ceiling", "our decoder per record: decode_batch with fastavro, one process"),
    Contender("decode-block", "ceiling", "our decoder, block path: decode_batch with DataFusion, one process"),
    Contender("datafusion-read", "ceiling", "DataFusion's Avro read alone of the block path's containers, one process"),
    Contender("pykafka-raw", "ceiling", 'format("pykafka") without decoding → noop'),
    Contender("decoded-rows", "ceiling", "the decoded rows, made beforehand, from a Python source → noop"),
]
BY_NAME = {c.name: c for c in CONTENDERS}
# The ceilings' per-core rates are compared with the noop reference: the same decode, no sink.
REF_OF_GROUP = {"noop": "kafka-from_avro", "ceiling": "kafka-from_avro", "delta": "delta-from_avro"}
IN_PROCESS = ("fastavro", "decode-batch", "decode-block", "datafusion-read")


@dataclass
class Sample:
    """One timed run: rows read, the checksum it gives, seconds, peak Python worker RSS, and for the Spark runs the
    CPU seconds of the broker, Spark's JVM and its Python workers."""

    records: int
    checksum: int
    seconds: float
    rss_worker_mb: float | None = None
    cpu: dict[str, float] | None = None


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Runs(Protocol):
    """What runs the contenders (avro_bench.Runner, registry_bench.Runner)."""

    def run(self, name: str, data: Any) -> Sample: ...

    def expected(self, name: str, data: Any) -> int: ...


def check(runner: Runs, name: str, data: Any, sample: Sample) -> None:
    """Stop on a wrong count or checksum."""
    want = runner.expected(name, data)
    if sample.records != data.records or sample.checksum != want:
        raise RuntimeError(f"{name} read {sample.records} records with checksum {sample.checksum}; "
                           f"expected {data.records} and {want}")


def measure(runner: Runs, data: Any, names: list[str], runs: int, cores: int,
            save: Callable[[dict[str, Any]], None],
            summary: Callable[[dict[str, list[Sample]], int], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every contender `runs` times, the order reversed on odd runs; stops on a wrong count or checksum. `summary`
    (default: `summarize`) makes the results of the samples."""
    summary = summary or summarize
    samples: dict[str, list[Sample]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else list(reversed(names)):
            sample = runner.run(name, data)
            check(runner, name, data, sample)
            samples[name].append(sample)
            rss = "" if sample.rss_worker_mb is None else f", worker RSS {sample.rss_worker_mb:.0f} MB"
            log(f"  run {i + 1}/{runs} {name}: {sample.seconds:.2f} s{rss}")
        save(summary(samples, cores))
    return summary(samples, cores)


def summarize(samples: dict[str, list[Sample]], cores: int, in_process: tuple[str, ...] = IN_PROCESS,
              ref_of: Callable[[str], str] | None = None, cpu: bool = True) -> dict[str, Any]:
    """Per contender: median/min/max seconds, records/s and per core at the median, × ref on the per-core rate.
    `in_process` names the one-core rows, `ref_of` a row's reference (default: its group's), `cpu` adds the runs'
    median CPU split."""
    ref_of = ref_of or (lambda name: REF_OF_GROUP[BY_NAME[name].group])
    out: dict[str, Any] = {}
    for name, runs in samples.items():
        if not runs:
            continue
        secs = [s.seconds for s in runs]
        median = statistics.median(secs)
        rate = runs[0].records / median
        used = 1 if name in in_process else cores
        worker = [s.rss_worker_mb for s in runs if s.rss_worker_mb is not None]
        out[name] = {"seconds": secs, "median_s": median, "min_s": min(secs), "max_s": max(secs),
                     "records": runs[0].records, "cores": used, "records_per_s": rate,
                     "records_per_s_per_core": rate / used, "rss_worker_mb": max(worker) if worker else None}
        if cpu:
            cpus = [s.cpu for s in runs if s.cpu]
            out[name]["cpu_s"] = {g: statistics.median(c[g] for c in cpus) for g in cpus[0]} if cpus else None
    for name, res in out.items():
        ref = out.get(ref_of(name))
        res["ratio_vs_ref"] = res["records_per_s_per_core"] / ref["records_per_s_per_core"] if ref else None
    return out


def mrate(rate: float) -> str:
    return f"{rate / 1e6:.3f} M"


def analysis(results: dict[str, Any], data: dict[str, Any], cores: int) -> list[str]:
    """Where the decode is the wall: our Spark read against the one-process decode ceiling on every core."""
    ours, raw = results.get("pykafka-avro"), results.get("pykafka-raw")
    per_record, block = results.get("decode-batch"), results.get("decode-block")
    ceiling = block or per_record
    lines = []
    if per_record and block:
        lines.append(f"- The decode alone, per core: the block path {mrate(block['records_per_s'])} records/s against "
                     f"{mrate(per_record['records_per_s'])} per record (fastavro), "
                     f"{block['records_per_s'] / per_record['records_per_s']:.1f}x.")
    if block and raw:
        lines.append(f"- Against the raw read per core ({mrate(raw['records_per_s_per_core'])} records/s, Spark and "
                     f"fetch included), the block decode alone runs at "
                     f"{block['records_per_s'] / raw['records_per_s_per_core']:.2f}x its rate.")
    if ours and ceiling:
        top = ceiling["records_per_s"] * cores
        lines.append(f"- Decode ceiling on {cores} cores (decode_batch in one process × {cores}): {mrate(top)} "
                     f'records/s. format("pykafka") Avro → noop reads {mrate(ours["records_per_s"])} records/s, '
                     f"{ours['records_per_s'] / top:.0%} of it.")
    if ours and raw and ceiling:
        lines.append(decode_cost(ours, raw, ceiling, data["records"], cores))
    rows = results.get("decoded-rows")
    if ours and rows:
        lines.append(f"- Handing Spark these rows already decoded (a Python source that only yields them) takes "
                     f"{rows['median_s']:.2f} s: the bridge's floor for this record, "
                     f"{rows['median_s'] / ours['median_s']:.0%} of our decoded read.")
    lines += cpu_floor(results, cores)
    fast, ref = results.get("fastavro"), results.get("kafka-from_avro")
    if fast and ref:
        lines.append(f"- Per core, fastavro alone decodes {mrate(fast['records_per_s'])} records/s; Spark's from_avro "
                     f"reads and decodes {mrate(ref['records_per_s_per_core'])} records/s per core.")
    return lines


def decode_cost(ours: dict[str, Any], raw: dict[str, Any], ceiling: dict[str, Any], records: int, cores: int) -> str:
    """What decoding adds to the undecoded read, against the decode alone at the ceiling's rate on every core."""
    decode_s = records / (ceiling["records_per_s"] * cores)
    extra = ours["median_s"] - raw["median_s"]
    return (f"- Without decoding the source reads the topic in {raw['median_s']:.2f} s; decoding adds "
            f"{extra:.2f} s ({extra / ours['median_s']:.0%} of the decoded read), against "
            f"{decode_s:.2f} s for the decode alone at the ceiling's rate on {cores} cores "
            f"(floor + decode = {raw['median_s'] + decode_s:.2f} s; measured {ours['median_s']:.2f} s).")


def _spark_cpu(res: dict[str, Any] | None) -> float | None:
    """The JVM's and the Python workers' CPU seconds of a Spark row (median), or None."""
    cpu = (res or {}).get("cpu_s")
    return cpu["spark jvm"] + cpu["python workers"] if cpu else None


def cpu_floor(results: dict[str, Any], cores: int) -> list[str]:
    """How fast a Python source decoding with DataFusion could be on these cores: the CPU of fetching the records
    (the undecoded read's Python workers), of handing Spark the decoded rows (the decoded-rows ceiling) and of
    DataFusion's read alone, over the cores, against the reference's time; then the same with our whole decode."""
    ours, ref, rows = results.get("pykafka-avro"), results.get("kafka-from_avro"), results.get("decoded-rows")
    raw, block, native = results.get("pykafka-raw"), results.get("decode-block"), results.get("datafusion-read")
    bridge, mine = _spark_cpu(rows), _spark_cpu(ours)
    if not (ref and rows and raw and raw.get("cpu_s") and block and native and bridge is not None):
        return []
    fetch = raw["cpu_s"]["python workers"]
    # in-process rows are CPU seconds (process_time)
    floor, ours_floor = ((fetch + bridge + d) / cores for d in (native["median_s"], block["median_s"]))
    lines = [f"- CPU floor: fetching the records takes {fetch:.2f} CPU-s (the undecoded read's Python workers), "
             f"handing Spark the decoded rows {bridge:.2f} (JVM and Python workers, `decoded-rows`), DataFusion's "
             f"read alone {native['median_s']:.2f}: no Python source decoding with it can read these records in "
             f"less than {floor:.2f} s on {cores} cores, {ref['median_s'] / floor:.2f}x the reference's "
             f"{ref['median_s']:.2f} s; with our whole decode ({block['median_s']:.2f} CPU-s) {ours_floor:.2f} s, "
             f"{ref['median_s'] / ours_floor:.2f}x."]
    if mine is not None:
        lines.append(f"- Our decoded read used {mine:.2f} CPU-s (JVM and Python workers); "
                     f"Spark's from_avro {_spark_cpu(ref) or 0.0:.2f} CPU-s.")
    return lines


def markdown(result: dict[str, Any]) -> str:
    meta, data, results = result["meta"], result["data"], result["results"]
    cores = meta["cores"]
    lines = [f"# Avro through a schema registry ({meta['when']}, {meta['machine']})", "",
             f"Command: `{meta['command']}`  ",
             f"{data['records']:,} records, {data['value_bytes'] / data['records']:.0f} bytes a value "
             f"(Avro + 5-byte framing), {PARTITIONS} partitions, {data['log_bytes'] / 1e6:.0f} MB in the log; "
             f"{meta['runs']} runs each, interleaved; Spark local[{cores}]; {meta['seconds']:.0f} s in all.", "",
             "| group | contender | median s | min–max s | records/s | records/s per core | × ref | worker RSS MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += table_rows(CONTENDERS, results)
    lines += ["", f"records/s per core: records/s ÷ {cores} for the Spark rows (local[{cores}]), ÷ 1 for the "
              "one-process rows. × ref: the row's records/s per core ÷ the reference's (from_avro → noop for the "
              "noop and ceiling rows, from_avro → Delta for the Delta rows); above 1 is faster.", "",
              "Where the decode is the wall:", "", *analysis(results, data, cores)]
    return "\n".join(lines) + "\n"


def table_rows(contenders: list[Contender], results: dict[str, Any]) -> list[str]:
    """The table's row of every contender that ran, in the report's order."""
    lines = []
    for c in contenders:
        res = results.get(c.name)
        if res is None:
            continue
        ratio = "—" if res["ratio_vs_ref"] is None else f"{res['ratio_vs_ref']:.2f}"
        rss = "—" if res["rss_worker_mb"] is None else f"{res['rss_worker_mb']:.0f}"
        lines.append(f"| {c.group} | {c.label}{' (ref)' if c.ref else ''} | {res['median_s']:.2f} | "
                     f"{res['min_s']:.2f}–{res['max_s']:.2f} | {mrate(res['records_per_s'])} | "
                     f"{mrate(res['records_per_s_per_core'])} | {ratio} | {rss} |")
    return lines


def write(out: Path, stamp: str, result: dict[str, Any]) -> Path:
    return write_files(out, "avro", stamp, markdown(result), result)


def write_files(out: Path, prefix: str, stamp: str, text: str, result: dict[str, Any]) -> Path:
    """`<prefix>-<stamp>` and `<prefix>-latest`, .md (`text`) and .json (`result`), in `out`; the stamped .md."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (f"{prefix}-{stamp}", f"{prefix}-latest"):
        (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
        (out / f"{name}.md").write_text(text)
    return out / f"{prefix}-{stamp}.md"


# ---- the benches' command lines -------------------------------------------------------------------------

def command(script: str, argv: list[str] | None) -> str:
    """The command line that ran `script` (bench/<script>), for the report."""
    return " ".join([f".venv/bin/python bench/{script}", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])


def machine() -> str:
    return f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, Python {platform.python_version()}"


def chosen(parser: argparse.ArgumentParser, given: str | None, known: list[str], default: list[str],
           among: str = "known") -> list[str]:
    """The contenders --contenders names (comma-separated), all of them `known`; `default` without it."""
    if not given:
        return default
    names = [n.strip() for n in given.split(",") if n.strip()]
    unknown = set(names) - set(known)
    if unknown:
        parser.error(f"unknown contenders {sorted(unknown)}; {among}: {', '.join(known)}")
    return names


def finish(path: Path, text: str) -> None:
    """The report on stdout, and where it was written."""
    print()
    print(text)
    log(f"wrote {path} and {path.with_suffix('.json')}")

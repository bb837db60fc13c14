"""The runs and the report of bench/registry_bench.py: its contenders per format, the checked runs, their summary, the
analysis, the Markdown and JSON files."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

PARTITIONS = 2
REF = "spark"


@dataclass(frozen=True)
class Contender:
    """A row of the report; `ref` marks the reference (Spark's own function on format("kafka"))."""

    name: str
    group: str
    label: str
    ref: bool = False
    default: bool = True  # run unless --contenders names others


def contenders(fmt: str) -> list[Contender]:
    """The contenders of `fmt` (protobuf or json-schema), in the report's order."""
    if fmt == "protobuf":
        return [
            Contender("pykafka", "noop", 'format("pykafka") valueFormat=protobuf → noop'),
            Contender(REF, "noop", 'format("kafka") + from_protobuf(substring(value, 8), binaryDescriptorSet) → noop',
                      ref=True),
            Contender("raw", "ceiling", 'format("pykafka") without decoding → noop'),
            Contender("decode-record", "ceiling", "decode_batch per record (KAFKA_SPARK_PROTOBUF_BLOCK=0: upb), "
                      "one process"),
            Contender("decode-column", "ceiling", "decode_batch column-wise (ptars), one process"),
            Contender("decoded-rows", "ceiling", "the decoded rows, made beforehand, from a Python source → noop"),
        ]
    return [
        Contender("pykafka", "noop", 'format("pykafka") valueFormat=json-schema (validate=true, the default) → noop'),
        Contender("pykafka-novalidate", "noop", 'format("pykafka") valueFormat=json-schema, validate=false → noop'),
        Contender(REF, "noop", 'format("kafka") + from_json(cast(substring(value, 6) as string), DDL) → noop',
                  ref=True),
        Contender("raw", "ceiling", 'format("pykafka") without decoding → noop'),
        Contender("decode-record-validate", "ceiling", "decode_batch per record, validate=true, one process",
                  default=False),
        Contender("decode-record", "ceiling", "decode_batch per record, validate=false "
                  "(KAFKA_SPARK_JSON_SCHEMA_BLOCK=0: json.loads), one process"),
        Contender("decode-column", "ceiling", "decode_batch column-wise, validate=false (msgspec), one process"),
        Contender("decoded-rows", "ceiling", "the decoded rows, made beforehand, from a Python source → noop"),
    ]


IN_PROCESS = ("decode-record", "decode-record-validate", "decode-column")


@dataclass
class Sample:
    """One timed run: rows read, the checksum it gives, seconds (CPU seconds in process), peak Python worker RSS."""

    records: int
    checksum: int
    seconds: float
    rss_worker_mb: float | None = None


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Runs(Protocol):
    """What runs the contenders (registry_bench.Runner)."""

    def run(self, name: str, data: Any) -> Sample: ...

    def expected(self, name: str, data: Any) -> int: ...


def check(runner: Runs, name: str, data: Any, sample: Sample) -> None:
    want = runner.expected(name, data)
    if sample.records != data.records or sample.checksum != want:
        raise RuntimeError(f"{name} read {sample.records} records with checksum {sample.checksum}; "
                           f"expected {data.records} and {want}")


def warm_up(runner: Runs, warm: Any, names: list[str], rounds: int, skipped: dict[str, str]) -> list[str]:
    """Unrecorded, checked rounds of every contender; one that fails is left out, its error kept in `skipped`."""
    for _ in range(rounds):
        for name in list(names):
            try:
                check(runner, name, warm, runner.run(name, warm))
            except Exception as e:  # reported; the others go on
                reason = " ".join(str(e).split())[:300]
                log(f"  {name} failed, left out: {reason}")
                skipped[name] = reason
                names.remove(name)
    return names


def measure(runner: Runs, data: Any, names: list[str], runs: int, cores: int,
            save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every contender `runs` times, the order reversed on odd runs; stops on a wrong count or checksum."""
    samples: dict[str, list[Sample]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else list(reversed(names)):
            sample = runner.run(name, data)
            check(runner, name, data, sample)
            samples[name].append(sample)
            rss = "" if sample.rss_worker_mb is None else f", worker RSS {sample.rss_worker_mb:.0f} MB"
            log(f"  run {i + 1}/{runs} {name}: {sample.seconds:.2f} s{rss}")
        save(summarize(samples, cores))
    return summarize(samples, cores)


def summarize(samples: dict[str, list[Sample]], cores: int) -> dict[str, Any]:
    """Per contender: median/min/max seconds, records/s and per core at the median, × ref on the per-core rate."""
    out: dict[str, Any] = {}
    for name, runs in samples.items():
        if not runs:
            continue
        secs = [s.seconds for s in runs]
        median = statistics.median(secs)
        rate = runs[0].records / median
        used = 1 if name in IN_PROCESS else cores
        worker = [s.rss_worker_mb for s in runs if s.rss_worker_mb is not None]
        out[name] = {"seconds": secs, "median_s": median, "min_s": min(secs), "max_s": max(secs),
                     "records": runs[0].records, "cores": used, "records_per_s": rate,
                     "records_per_s_per_core": rate / used, "rss_worker_mb": max(worker) if worker else None}
    ref = out.get(REF)
    for res in out.values():
        res["ratio_vs_ref"] = res["records_per_s_per_core"] / ref["records_per_s_per_core"] if ref else None
    return out


def _m(rate: float) -> str:
    return f"{rate / 1e6:.3f} M"


def analysis(result: dict[str, Any]) -> list[str]:
    """Where the time goes: the in-process decode paths, the decode ceiling on every core against our read, the
    undecoded floor plus the decode, the rows' hand-over to Spark, and Spark's function."""
    fmt, results, records = result["meta"]["format"], result["results"], result["data"]["records"]
    cores = result["meta"]["cores"]
    json_schema = fmt == "json-schema"
    ours = results.get("pykafka-novalidate" if json_schema else "pykafka")
    ours_name = "validate=false" if json_schema else "valueFormat=protobuf"
    raw, ref, rows = results.get("raw"), results.get(REF), results.get("decoded-rows")
    per_record, column = results.get("decode-record"), results.get("decode-column")
    ceiling = column or per_record
    lines = []
    if per_record and column:
        lines.append(f"- The decode alone, per core: column-wise {_m(column['records_per_s'])} records/s against "
                     f"{_m(per_record['records_per_s'])} per record, "
                     f"**{column['records_per_s'] / per_record['records_per_s']:.1f}×**.")
    if ours and ceiling:
        top = ceiling["records_per_s"] * cores
        lines.append(f"- Decode ceiling on {cores} cores (the column-wise decode in one process × {cores}): "
                     f"{_m(top)} records/s. Our read ({ours_name}) → noop: {_m(ours['records_per_s'])} records/s, "
                     f"{ours['records_per_s'] / top:.0%} of it.")
    if ours and raw and ceiling:
        decode_s = records / (ceiling["records_per_s"] * cores)
        extra = ours["median_s"] - raw["median_s"]
        lines.append(f"- Without decoding the source reads the topic in {raw['median_s']:.2f} s; decoding adds "
                     f"{extra:.2f} s ({extra / ours['median_s']:.0%} of the decoded read), against "
                     f"{decode_s:.2f} s for the decode alone at the ceiling's rate on {cores} cores "
                     f"(floor + decode = {raw['median_s'] + decode_s:.2f} s; measured {ours['median_s']:.2f} s).")
    if ours and rows:
        floor = f"{rows['median_s'] / ours['median_s']:.0%} of our decoded read"
        if ceiling:
            floor += (f"; rows + decode at the ceiling's rate = "
                      f"{rows['median_s'] + records / (ceiling['records_per_s'] * cores):.2f} s")
        lines.append(f"- Handing Spark the decoded rows (made beforehand, a Python source that only yields them) "
                     f"takes {rows['median_s']:.2f} s: the bridge's floor for this record, {floor}.")
    if ours and ref:
        lines.append(f"- Spark's own function reads and decodes {_m(ref['records_per_s_per_core'])} records/s per "
                     f"core; ours {_m(ours['records_per_s_per_core'])}: **{ours['ratio_vs_ref']:.2f}×**.")
    if json_schema:
        checked = results.get("pykafka")
        if checked and ours:
            lines.append(f"- Validation (`validate=true`, the default): {checked['median_s']:.2f} s against "
                         f"{ours['median_s']:.2f} s without ({checked['median_s'] / ours['median_s']:.1f}× the "
                         "time): jsonschema validates per record, and a validated read takes no column-wise path. "
                         "`from_json` validates nothing, so `validate=false` is the read comparable to it.")
        validated = results.get("decode-record-validate")
        if validated and checked:
            top = validated["records_per_s"] * cores
            lines.append(f"- Validated per-record decode alone: {_m(validated['records_per_s'])} records/s per core; "
                         f"× {cores} = {_m(top)}, and the validated read reaches "
                         f"{checked['records_per_s'] / top:.0%} of it.")
    return lines


def markdown(result: dict[str, Any]) -> str:
    meta, data, results = result["meta"], result["data"], result["results"]
    cores, fmt = meta["cores"], meta["format"]
    what = ("Protobuf (Confluent framing: magic byte, 4-byte id, message indexes [1] as two bytes)" if fmt == "protobuf"
            else "JSON (Confluent framing: magic byte, 4-byte id)")
    lines = [f"# {fmt} through a schema registry ({meta['when']}, {meta['machine']})", "",
             f"Command: `{meta['command']}`  ",
             f"{data['records']:,} records, {data['value_bytes'] / data['records']:.0f} bytes a value ({what}), "
             f"{PARTITIONS} partitions, {data['log_bytes'] / 1e6:.0f} MB in the log; {meta['runs']} runs each, "
             f"interleaved; Spark local[{cores}]; load average {meta.get('load_start', '?')} at the start, "
             f"{meta.get('load_end', '?')} at the end; {meta['seconds']:.0f} s in all.", "",
             "| group | contender | median s | min–max s | records/s | records/s per core | × Spark's function | "
             "worker RSS MB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in contenders(fmt):
        res = results.get(c.name)
        if res is None:
            continue
        ratio = "—" if res["ratio_vs_ref"] is None else f"{res['ratio_vs_ref']:.2f}"
        rss = "—" if res["rss_worker_mb"] is None else f"{res['rss_worker_mb']:.0f}"
        lines.append(f"| {c.group} | {c.label}{' (ref)' if c.ref else ''} | {res['median_s']:.2f} | "
                     f"{res['min_s']:.2f}–{res['max_s']:.2f} | {_m(res['records_per_s'])} | "
                     f"{_m(res['records_per_s_per_core'])} | {ratio} | {rss} |")
    for name, reason in result.get("skipped", {}).items():
        lines.append(f"| — | `{name}`: not run ({reason}) | | | | | | |")
    lines += ["", f"records/s per core: records/s ÷ {cores} for the Spark rows (local[{cores}]), ÷ 1 for the "
              "one-process rows (timed in CPU seconds). × Spark's function: the row's records/s per core ÷ the "
              "reference's; above 1 is faster.", "", "Where the time goes:", "", *analysis(result)]
    return "\n".join(lines) + "\n"


def write(out: Path, fmt: str, stamp: str, result: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(result)
    for name in (f"registry-{fmt}-{stamp}", f"registry-{fmt}-latest"):
        (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
        (out / f"{name}.md").write_text(text)
    return out / f"registry-{fmt}-{stamp}.md"

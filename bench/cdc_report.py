"""The report of bench/cdc_bench.py: its contenders, what one run measured, the summary, the Markdown and JSON."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REF = "spark-merge"
# The speed-up the change-data-capture sink is held to against the reference, on total time.
TARGET = 2.0


@dataclass(frozen=True)
class Contender:
    name: str
    label: str


CONTENDERS = [
    Contender("spark-merge", 'format("kafka") + from_json + foreachBatch: row_number + DeltaTable.merge (ref)'),
    Contender("ours-direct", 'start_stream(cdc="debezium"), writer auto (delta-rs MERGE)'),
    Contender("ours-spark", 'start_stream(cdc="debezium", writer="spark") (Delta MERGE on Spark)'),
]
BY_NAME = {c.name: c for c in CONTENDERS}


@dataclass
class Batch:
    """One micro-batch: its id, the records Spark read for it, the whole trigger as Spark timed it
    (progress `durationMs.triggerExecution`), the batch function's own time (`foreachBatch`: dedup + MERGE +
    commit) and, for ours, the writer that served it."""

    batch_id: int
    records: int
    trigger_s: float
    apply_s: float | None
    writer: str | None = None


@dataclass
class Run:
    """One timed run: seconds from the stream's definition (and, for the reference, the table's creation) to
    its end, the records read, its micro-batches and the checked table (`check`)."""

    seconds: float
    records: int
    batches: list[Batch] = field(default_factory=list)
    check: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return asdict(self)


def _p50(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(runs: dict[str, list[Run]], changes: int) -> dict[str, Any]:
    """Per contender: median/min/max seconds, changes/s at the median, per-batch p50 (the median of the runs'
    p50s) and max (over every run) of the trigger and of the batch function, the writers seen, and the
    reference's median over the row's (× ref; above 1 is faster), on total time and on the per-batch p50."""
    out: dict[str, Any] = {}
    for name, done in runs.items():
        if not done:
            continue
        secs = [r.seconds for r in done]
        median = statistics.median(secs)
        triggers = [[b.trigger_s for b in r.batches] for r in done]
        applies = [[b.apply_s for b in r.batches if b.apply_s is not None] for r in done]
        trigger_p50s = [p for p in map(_p50, triggers) if p is not None]
        apply_p50s = [p for p in map(_p50, applies) if p is not None]
        out[name] = {
            "seconds": secs, "median_s": median, "min_s": min(secs), "max_s": max(secs),
            "changes_per_s": changes / median, "batches": [len(r.batches) for r in done],
            "batch_p50_s": _p50(trigger_p50s), "batch_max_s": max((max(t) for t in triggers if t), default=None),
            "apply_p50_s": _p50(apply_p50s), "apply_max_s": max((max(a) for a in applies if a), default=None),
            "writers": sorted({b.writer for r in done for b in r.batches if b.writer}),
            "runs": [r.summary() for r in done],
        }
    ref = out.get(REF)
    for res in out.values():
        res["x_ref"] = ref["median_s"] / res["median_s"] if ref else None
        ref_p50, p50 = (ref or {}).get("batch_p50_s"), res["batch_p50_s"]
        res["x_ref_batch_p50"] = ref_p50 / p50 if ref_p50 and p50 else None
    return out


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def verdict(results: dict[str, Any]) -> str:
    ours = results.get("ours-direct")
    if ours is None or ours["x_ref"] is None:
        return ""
    met = "met" if ours["x_ref"] >= TARGET else "**not met**"
    return (f"Target: `ours-direct` at least {TARGET:.0f}× `spark-merge` on total time: {met} "
            f"({ours['x_ref']:.2f}×).")


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| contender | median s | min–max s | changes/s | batches | batch p50 s | batch max s | "
             "foreachBatch p50 s | × ref | × ref, batch p50 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in CONTENDERS:
        res = results.get(c.name)
        if res is None:
            continue
        writers = f" [{', '.join(res['writers'])}]" if res["writers"] else ""
        batches = "/".join(str(n) for n in sorted(set(res["batches"])))
        lines.append(f"| `{c.name}`: {c.label}{writers} | {res['median_s']:.2f} | {res['min_s']:.2f}–{res['max_s']:.2f}"
                     f" | {res['changes_per_s']:,.0f} | {batches} | {_s(res['batch_p50_s'])} | "
                     f"{_s(res['batch_max_s'])} | {_s(res['apply_p50_s'])} | {_x(res['x_ref'])} | "
                     f"{_x(res['x_ref_batch_p50'])} |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    meta, data, results = result["meta"], result["data"], result["results"]
    ops = data["ops"]
    lines = [f"# Change data capture: Debezium changes into Delta ({meta['when']}, {meta['machine']})", "",
             f"Command: `{meta['command']}`  ",
             f"{data['changes']:,} changes over {data['keys']:,} keys (c {ops.get('c', 0):,}, u {ops.get('u', 0):,}, "
             f"d {ops.get('d', 0):,}; {data['tombstones']:,} tombstones: {data['records']:,} records), "
             f"{data['value_bytes'] / max(data['changes'], 1):.0f} bytes a change event, {data['partitions']} "
             f"partitions keyed by id, seed {data['seed']}; {data['rows']:,} rows in the final table. "
             f"Micro-batches of maxOffsetsPerTrigger {meta['batch']:,}; {meta['runs']} runs each, order alternated, "
             f"after {meta.get('warmup_rounds', '?')} unrecorded round(s) on a small topic; "
             f"Spark local[{meta.get('cores', '?')}]; load average {meta['load_before']} at the start"
             + (f", {meta['load_after']} at the end" if meta.get("load_after") else "")
             + f"; {meta['seconds']:.0f} s in all.", "",
             *table(results), "",
             "Every run's table was checked row by row against the expected final state "
             f"({data['rows']:,} rows, sum(quantity) {data['quantity_sum']:,}, count(email) {data['email_count']:,}).",
             "median s: from defining the stream (for the reference, creating its empty table first) to the query's "
             "end, every batch committed. batch p50/max: the micro-batch as Spark times it (progress "
             "`durationMs.triggerExecution`: offsets, planning, the batch function, the commit log); p50 is the "
             "median of the runs' p50s, max over every run. foreachBatch: the batch function alone. × ref: the "
             "reference's time ÷ the row's (above 1 is faster).", ""]
    line = verdict(results)
    return "\n".join([*lines, *([line, ""] if line else [])])


def write(out: Path, stamp: str, result: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(result)
    for name in (f"cdc-{stamp}", "cdc-latest"):
        (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
        (out / f"{name}.md").write_text(text)
    return out / f"cdc-{stamp}.md"

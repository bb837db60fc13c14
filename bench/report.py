"""Statistics over repeated runs, the JSON result file and the Markdown tables."""

from __future__ import annotations

import statistics
from typing import Any

from bench.workloads import BY_NAME, WORKLOADS, Sample

MB = 1e6


def summarize(samples: list[Sample]) -> dict[str, Any]:
    """Median, min and max seconds; rates at the median; the largest peak RSS over the runs."""
    secs = [s.seconds for s in samples]
    median = statistics.median(secs)
    records, payload = samples[0].records, samples[0].payload_bytes
    worker = [s.rss_worker_mb for s in samples if s.rss_worker_mb is not None]
    total = [s.rss_total_mb for s in samples if s.rss_total_mb is not None]
    return {
        "runs": len(samples), "seconds": secs, "median_s": median, "min_s": min(secs), "max_s": max(secs),
        "records": records, "payload_bytes": payload,
        "records_per_s": records / median if median > 0 else None,
        "mb_per_s": payload / median / MB if median > 0 else None,
        "rss_worker_mb": max(worker) if worker else None, "rss_total_mb": max(total) if total else None,
    }


def add_ratios(results: dict[str, dict[str, Any]]) -> None:
    """`ratio_vs_ref`: the group reference's median time over this workload's (above 1 = faster)."""
    refs = {w.group: results[w.name]["median_s"] for w in WORKLOADS if w.ref and w.name in results}
    for name, res in results.items():
        ref = refs.get(BY_NAME[name].group)
        res["ratio_vs_ref"] = ref / res["median_s"] if ref and res["median_s"] > 0 else None
    client, kp = results.get("client-ours"), results.get("kafka-python")
    if client and kp:
        client["ratio_vs_kafka_python"] = kp["median_s"] / client["median_s"]


def _f(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def case_table(cases: list[dict[str, Any]]) -> str:
    """Every case and workload: times, rates, ratio to the reference and peak worker RSS."""
    lines = ["| case | workload | median s | min–max s | rec/s | MB/s | × ref | worker RSS MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        for w in WORKLOADS:
            res = case["workloads"].get(w.name)
            if res is None:
                continue
            ref = " (ref)" if w.ref else ""
            lines.append(
                f"| {case['name']} | {w.label}{ref} | {res['median_s']:.2f} | {res['min_s']:.2f}–{res['max_s']:.2f} | "
                f"{_f(res['records_per_s'] and res['records_per_s'] / 1e6, '.2f')} M | {_f(res['mb_per_s'], '.0f')} | "
                f"{_f(res.get('ratio_vs_ref'), '.2f')} | {_f(res['rss_worker_mb'], '.0f')} |")
    return "\n".join(lines)


def target_table(cases: list[dict[str, Any]]) -> str:
    """The tracked targets per case, as ratios of median times (above 1 = ours faster)."""
    def ratio(case: dict[str, Any], ours: str, peer: str) -> str:
        a, b = case["workloads"].get(ours), case["workloads"].get(peer)
        return "—" if not a or not b else f"{b['median_s'] / a['median_s']:.2f}"

    lines = ["| case | pykafka/kafka noop | pykafka/kafka agg | pykafka/kafka Delta append | Delta load ours/peer | "
             "client/kafka-python | client/confluent | client/ConsumerPerf | decoder/kafka-python |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        lines.append("| " + " | ".join([
            case["name"], ratio(case, "pykafka-noop", "kafka-noop"), ratio(case, "pykafka-agg", "kafka-agg"),
            ratio(case, "delta-pykafka", "delta-kafka"), ratio(case, "delta-ours", "delta-kafka"),
            ratio(case, "client-ours", "kafka-python"),
            ratio(case, "client-ours", "confluent-kafka"), ratio(case, "client-ours", "consumer-perf"),
            ratio(case, "decoder-ours", "decoder-kafka-python")]) + " |")
    return "\n".join(lines)


def scaling_table(scaling: dict[str, Any]) -> str:
    """Median time at n and 4n records; a growth of 1.00 per record is exactly linear."""
    if not scaling:
        return ""
    small, large = scaling["records"]
    lines = [f"| workload | {small:,} records s | {large:,} records s | time ratio | per-record growth | "
             "worker RSS MB (small → large) |", "|---|---:|---:|---:|---:|---:|"]
    for name, (a, b) in scaling["workloads"].items():
        growth = (b["median_s"] / a["median_s"]) / (large / small)
        lines.append(f"| {BY_NAME[name].label} | {a['median_s']:.2f} | {b['median_s']:.2f} | "
                     f"{b['median_s'] / a['median_s']:.2f} | {growth:.2f} | "
                     f"{_f(a['rss_worker_mb'], '.0f')} → {_f(b['rss_worker_mb'], '.0f')} |")
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    """The whole report."""
    meta = result["meta"]
    parts = [
        f"Command: `{meta['command']}`  ",
        f"{meta['when']}; {meta['machine']}; {meta['runs']} runs per workload (interleaved; "
        f"{meta.get('slow_runs', meta['runs'])} for kafka-python); "
        f"{meta['seconds']:.0f} s in all.",
        "",
        "### Targets (ratios of median times; above 1 means ours is faster)",
        "",
        target_table(result["cases"]),
        "",
        "### All cases",
        "",
        case_table(result["cases"]),
    ]
    if result.get("scaling"):
        parts += ["", f"### Scaling ({result['scaling']['case']})", "", scaling_table(result["scaling"])]
    return "\n".join(parts) + "\n"

"""The report of bench/kdi_bench.py: the Delta log read as it grows, per-record time-to-table, the Markdown and JSON."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np


@dataclass
class Commit:
    """One Delta version: its commitInfo timestamp, when its log file appeared (the moment readers could see it:
    a writer stamps commitInfo before it writes the file) and the data files it added, with their rows."""

    version: int
    timestamp_ms: int
    visible_ms: int
    files: list[tuple[str, int, int]] = field(default_factory=list)  # (path in the table, rows, bytes)


class LogTail:
    """The commits of a Delta table, read from its `_delta_log` as they land. No engine: both writers put row
    counts in every file's statistics, so polling this every few hundred ms costs next to nothing."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self.commits: dict[int, Commit] = {}
        self.rows = 0

    def poll(self) -> int:
        """Read the versions not seen yet; the rows the table holds now."""
        log = self.table / "_delta_log"
        if not log.is_dir():
            return self.rows
        for path in sorted(log.glob("*.json")):
            if not path.stem.isdigit() or int(path.stem) in self.commits:
                continue
            commit = self._read(int(path.stem), path)
            if commit is not None:
                self.commits[commit.version] = commit
                self.rows += sum(rows for _, rows, _ in commit.files)
        return self.rows

    def _read(self, version: int, path: Path) -> Commit | None:
        try:
            visible_ms = path.stat().st_mtime_ns // 1_000_000
            actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except (OSError, json.JSONDecodeError):  # not complete yet: the next poll reads it
            return None
        commit = Commit(version, visible_ms, visible_ms)
        for action in actions:
            if "commitInfo" in action and "timestamp" in action["commitInfo"]:
                commit.timestamp_ms = int(action["commitInfo"]["timestamp"])
            if "add" in action:
                add = action["add"]
                stats = json.loads(add["stats"]) if add.get("stats") else {}
                name = unquote(add["path"])
                rows = stats.get("numRecords")
                if rows is None:
                    import pyarrow.parquet as pq

                    rows = pq.ParquetFile(self.table / name).metadata.num_rows
                commit.files.append((name, int(rows), int(add.get("size", 0))))
        return commit

    def reached(self, rows: int) -> Commit | None:
        """The first version at which the table held at least `rows` rows."""
        held = 0
        for version in sorted(self.commits):
            held += sum(r for _, r, _ in self.commits[version].files)
            if held >= rows:
                return self.commits[version]
        return None

    def column(self, name: str) -> list[tuple[Commit, np.ndarray]]:
        """Each data version with the values of column `name` (`data.id`: a nested field) in the files it added."""
        import pyarrow.parquet as pq

        out = []
        for version in sorted(self.commits):
            commit = self.commits[version]
            if commit.files:
                parts = [pq.read_table(self.table / p, columns=[name]).column(0).to_numpy() for p, _, _ in commit.files]
                out.append((commit, np.concatenate(parts)))
        return out

    def shape(self) -> dict[str, int]:
        data = [c for c in self.commits.values() if c.files]
        return {"versions": len(self.commits), "data_commits": len(data),
                "files": sum(len(c.files) for c in data), "bytes": sum(b for c in data for _, _, b in c.files)}


def check_ids(tail: LogTail, id_column: str, want: int) -> dict[str, Any]:
    """The table holds exactly ids 0..want-1, each once: count, sum and distinct count."""
    ids = np.concatenate([v for _, v in tail.column(id_column)] or [np.array([], np.int64)])
    out = {"rows": int(ids.size), "id_sum": int(ids.sum()), "distinct": int(np.unique(ids).size)}
    out["ok"] = out["rows"] == out["distinct"] == want and out["id_sum"] == want * (want - 1) // 2
    return out


def _quantiles(ms: np.ndarray) -> dict[str, float]:
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max())}


def time_to_table(tail: LogTail, sent_column: str) -> dict[str, Any]:
    """Per record: the commitInfo time of the version that added it minus its send time (= its Kafka timestamp),
    and the same against the moment the version's log file appeared; per version, its oldest record's age."""
    columns = tail.column(sent_column)
    if not columns:
        return {"records": 0}
    by_commit = np.concatenate([c.timestamp_ms - sent for c, sent in columns])
    by_file = np.concatenate([c.visible_ms - sent for c, sent in columns])
    return {"records": int(by_commit.size), "commits": len(columns), **_quantiles(by_commit),
            "visible": _quantiles(by_file),
            "per_version_max_ms": {str(c.version): int(c.timestamp_ms - sent.min()) for c, sent in columns}}


def agreement(measured: dict[str, Any], reported: list[dict[str, Any]]) -> dict[str, Any]:
    """Our stream's own freshness (each commit's LoadResult) beside the table's: the largest difference of a
    commit's max, and the figures the stream reported (record-weighted median of p50s, the largest p99 and max)."""
    mine = measured.get("per_version_max_ms", {})
    fresh = [r for r in reported if r.get("freshness")]
    diffs = [abs(r["freshness"]["max"] - mine[str(r["version"])]) for r in fresh if str(r["version"]) in mine]
    if not fresh:
        return {}
    p50s = sorted((r["freshness"]["p50"], r["rows"]) for r in fresh)
    half, seen, p50 = sum(w for _, w in p50s) / 2, 0, p50s[-1][0]
    for value, weight in p50s:
        seen += weight
        if seen >= half:
            p50 = value
            break
    return {"commits": len(fresh), "p50_ms_weighted": p50, "p99_ms_largest": max(r["freshness"]["p99"] for r in fresh),
            "max_ms": max(r["freshness"]["max"] for r in fresh),
            "largest_max_difference_ms": max(diffs) if diffs else None}


def _cell(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    meta, kdi, ours = result["meta"], result["meta"].get("kdi", {}), result["meta"]["ours"]
    lines = [f"# kafka-delta-ingest beside kafka_spark ({meta['when']}, {meta['machine']})", "",
             f"`{meta['command']}`", "",
             f"- records: JSON objects of ~{meta['size']} B (`{meta['value_schema']}`), {meta['partitions']} "
             f"partitions, one local broker; `sent_ms` = the record's Kafka timestamp (CreateTime)",
             *([f"- {kdi['version']} at commit `{kdi['commit']}`: `{' '.join(kdi['args'])}`, "
                f"{kdi['workers']} process(es) in one consumer group"] if kdi else []),
             f"- ours: {ours['throughput']}; {ours['stream']}", ""]
    tp = result.get("throughput", [])
    if tp:
        lines += [f"## Throughput: {meta['records']:,} records into an empty table", "",
                  "| contender | run | seconds | records/s | × KDI | data commits | files | table MB | check |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        kdi_s = [r["seconds"] for r in tp if r["contender"] == "kdi"]
        ref = statistics.median(kdi_s) if kdi_s else None
        for r in tp:
            ratio = f"{ref / r['seconds']:.2f}" if ref else "—"
            check = "ok" if r["check"]["ok"] else f"FAILED {r['check']}"
            lines.append(f"| {r['contender']} | {r['run']} | {r['seconds']:.2f} | {r['records'] / r['seconds']:,.0f} "
                         f"| {ratio} | {r['shape']['data_commits']} | {r['shape']['files']} | "
                         f"{r['shape']['bytes'] / 1e6:,.1f} | {check} |")
        lines += ["", "kdi: from starting the process to the commitInfo time of the version that completed the table "
                  "(no Spark to start); ours: the `load()` call, in a warm Spark session. × KDI: KDI's median "
                  "seconds / the row's (above 1: faster than KDI)."]
    lat = result.get("latency", [])
    if lat:
        head = lat[0]
        lines += ["", f"## Time-to-table at {head['rate']:,} records/s for {head['seconds']:.0f} s "
                  f"({meta['latency_mode']})", "",
                  "| contender | records | data commits | p50 ms | p99 ms | max ms | visible p50 / p99 / max ms "
                  "| check |",
                  "|---|---:|---:|---:|---:|---:|---|---|"]
        for r in lat:
            t, v = r["time_to_table"], r["time_to_table"].get("visible", {})
            check = "ok" if r["check"]["ok"] else f"FAILED {r['check']}"
            lines.append(f"| {r['contender']} | {t.get('records', 0):,} | {t.get('commits', 0)} | "
                         f"{_cell(t.get('p50_ms'))} | {_cell(t.get('p99_ms'))} | {_cell(t.get('max_ms'))} | "
                         f"{_cell(v.get('p50_ms'))} / {_cell(v.get('p99_ms'))} / {_cell(v.get('max_ms'))} | {check} |")
        lines += ["", "Per record: the commitInfo time of the Delta version that first holds it minus its Kafka "
                  "timestamp; visible: the same against the modification time of that version's log file."]
        for r in lat:
            own = r.get("own_freshness")
            if own:
                lines.append(f"Our stream's own freshness over {own['commits']} commits: p50 {own['p50_ms_weighted']} "
                             f"ms (record-weighted median of the commits'), largest p99 {own['p99_ms_largest']} ms, "
                             f"max {own['max_ms']} ms; a commit's max differs from the table's by at most "
                             f"{_cell(own['largest_max_difference_ms'])} ms.")
            lines.append(f"{r['contender']}: producer sent {r['sent']:,} records, at most "
                         f"{r['producer_behind_ms']:.0f} ms behind its schedule.")
    return "\n".join(lines) + "\n"


def write(result: dict[str, Any], out: Path, stamp: str, name: str = "kdi",
          render: Callable[[dict[str, Any]], str] = markdown) -> Path:
    """<name>-<stamp>.json/.md (the Markdown by `render`) and <name>-latest.*; the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{stamp}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    path.with_suffix(".md").write_text(render(result))
    shutil.copy(path, out / f"{name}-latest.json")
    shutil.copy(path.with_suffix(".md"), out / f"{name}-latest.md")
    return path.with_suffix(".md")

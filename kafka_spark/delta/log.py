"""A small reader of a Delta table's transaction log, for what the sink needs and nothing more.

It answers, without Spark: the latest table version, the `txn` (appId -> version) state, and the
actions of a given commit (its `commitInfo.userMetadata`, its `txn`). Classic single- and multi-part
checkpoints are read with pyarrow; JSON commits after the checkpoint are replayed on top.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_spark.errors import KafkaSparkError

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d{10}\.\d{10})?\.parquet$")


class DeltaLogError(KafkaSparkError):
    """The Delta log is missing, unreadable, or lacks a commit that should be there."""


@dataclass(frozen=True)
class Txn:
    """Delta's application transaction record: the last `version` committed by `app_id`."""

    app_id: str
    version: int
    last_updated: int | None = None


class DeltaLog:
    """The `_delta_log` directory of a table on a local (or locally mounted) file system."""

    def __init__(self, table: str | Path) -> None:
        self.table = Path(str(table).removeprefix("file:"))
        self.log_dir = self.table / "_delta_log"

    def exists(self) -> bool:
        return self.log_dir.is_dir() and any(_COMMIT.match(p.name) or _CHECKPOINT.match(p.name)
                                             for p in self.log_dir.iterdir())

    def _versions(self) -> tuple[list[int], dict[int, list[Path]]]:
        if not self.log_dir.is_dir():
            raise DeltaLogError(f"{self.table} is not a Delta table (no _delta_log directory)")
        commits, checkpoints = [], {}
        for p in self.log_dir.iterdir():
            if m := _COMMIT.match(p.name):
                commits.append(int(m.group(1)))
            elif m := _CHECKPOINT.match(p.name):
                checkpoints.setdefault(int(m.group(1)), []).append(p)
        return sorted(commits), checkpoints

    def latest_version(self) -> int | None:
        """The newest committed table version, or None for a table with no commits."""
        commits, checkpoints = self._versions()
        candidates = commits + list(checkpoints)
        return max(candidates) if candidates else None

    def commit_actions(self, version: int) -> list[dict[str, Any]] | None:
        """The actions of commit `version`, or None if its file has been cleaned up."""
        path = self.log_dir / f"{version:020d}.json"
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise DeltaLogError(f"commit file {path} is not valid JSON lines: {exc}") from None

    def user_metadata(self, version: int) -> str | None:
        """`commitInfo.userMetadata` of commit `version` (None if absent or cleaned up)."""
        for action in self.commit_actions(version) or []:
            if "commitInfo" in action:
                return action["commitInfo"].get("userMetadata")
        return None

    def transactions(self) -> dict[str, Txn]:
        """The `txn` state of the latest snapshot: the last version each application committed."""
        commits, checkpoints = self._versions()
        complete = [v for v, parts in checkpoints.items() if _checkpoint_complete(parts)]
        base = max(complete) if complete else -1
        if base < 0 and commits and commits[0] != 0:
            raise DeltaLogError(f"{self.table}: commits before {commits[0]} are gone and no checkpoint covers them")
        state: dict[str, Txn] = {}
        if base >= 0:
            for txn in _checkpoint_txns(checkpoints[base]):
                state[txn.app_id] = txn
        for v in commits:
            if v <= base:
                continue
            for action in self.commit_actions(v) or []:
                if "txn" in action:
                    t = action["txn"]
                    state[t["appId"]] = Txn(t["appId"], int(t["version"]), t.get("lastUpdated"))
        return state

    def find_txn_commit(self, app_id: str, txn_version: int, after: int = -1) -> int | None:
        """The table version whose commit carries `txn(app_id, txn_version)`, if its file still exists."""
        commits, _ = self._versions()
        for v in reversed(commits):
            if v <= after:
                break
            for action in self.commit_actions(v) or []:
                t = action.get("txn")
                if t and t["appId"] == app_id and int(t["version"]) == txn_version:
                    return v
        return None


def _checkpoint_complete(parts: list[Path]) -> bool:
    if len(parts) == 1 and parts[0].name.count(".") == 2:
        return True
    # Multi-part: <v>.checkpoint.<i>.<n>.parquet, all n parts present.
    totals = {int(p.name.split(".")[3]) for p in parts if p.name.count(".") == 4}
    return len(totals) == 1 and len(parts) == totals.pop()


def _checkpoint_txns(parts: list[Path]) -> list[Txn]:
    import pyarrow.parquet as pq

    out = []
    for part in sorted(parts):
        table = pq.read_table(part, columns=["txn"])
        for row in table.column("txn").to_pylist():
            if row and row.get("appId") is not None:
                out.append(Txn(row["appId"], int(row["version"]), row.get("lastUpdated")))
    return out

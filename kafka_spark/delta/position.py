"""The committed Kafka position of a Delta table: what each sink has loaded, read from the table alone.

Every load commits its rows with Delta's `txn` action (`txnAppId` = "kafka-spark/<sink id>",
`txnVersion` = the batch number) and `userMetadata` holding the batch's offsets. `txn` survives
checkpoints and log cleanup; `userMetadata` does not, so after each commit the same JSON is also
kept at `<table>/_kafka_spark/offsets/<sink id>/<batch>.json`, written from the committed truth only.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.log import DeltaLog, DeltaLogError
from kafka_spark.errors import ConfigError
from kafka_spark.offsets.ranges import offsets_from_json, offsets_to_json

APP_PREFIX = "kafka-spark/"
FORMAT_VERSION = 1
_SINK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_sink_id(sink_id: str) -> str:
    """Validate a sink id: letters, digits, '.', '_' and '-' (it names files and a Delta txn)."""
    if not _SINK_ID.match(sink_id):
        raise ConfigError(f"sink id {sink_id!r} must be 1-100 characters of letters, digits, '.', '_' or '-'")
    return sink_id


def app_id(sink_id: str) -> str:
    """The Delta `txnAppId` of a sink."""
    return APP_PREFIX + sink_id


@dataclass(frozen=True)
class SinkCommit:
    """One committed batch of a sink: the end offsets (next offset to read) of every partition it covers."""

    sink_id: str
    batch: int
    offsets: dict[TopicPartition, int]
    start_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    run_id: str = ""
    records: int = 0
    committed_at_ms: int = 0

    def to_json(self) -> str:
        return json.dumps({
            "kafka_spark": FORMAT_VERSION, "sink": self.sink_id, "batch": self.batch, "run": self.run_id,
            "records": self.records, "at": self.committed_at_ms,
            "offsets": json.loads(offsets_to_json(self.offsets)),
            "start": json.loads(offsets_to_json(self.start_offsets)),
        }, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> SinkCommit:
        try:
            raw: dict[str, Any] = json.loads(text)
            return cls(
                sink_id=raw["sink"], batch=int(raw["batch"]), run_id=raw.get("run", ""),
                records=int(raw.get("records", 0)), committed_at_ms=int(raw.get("at", 0)),
                offsets=offsets_from_json(json.dumps(raw["offsets"]), where),
                start_offsets=offsets_from_json(json.dumps(raw.get("start", {})), where),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise DeltaLogError(f"{where}: not a kafka-spark offsets record ({exc})") from None


def offsets_dir(table: str | Path, sink_id: str) -> Path:
    return Path(str(table).removeprefix("file:")) / "_kafka_spark" / "offsets" / sink_id


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_pending(table: str | Path, commit: SinkCommit) -> Path:
    """Record a batch about to be committed (kept for diagnosis; never read as truth)."""
    path = offsets_dir(table, commit.sink_id) / "pending" / f"{commit.batch}-{commit.run_id}.json"
    _write_atomic(path, commit.to_json())
    return path


def materialize(table: str | Path, commit: SinkCommit) -> None:
    """Keep a committed batch's offsets beside the table, and drop pending records up to it."""
    d = offsets_dir(table, commit.sink_id)
    _write_atomic(d / f"{commit.batch}.json", commit.to_json())
    pending = d / "pending"
    if pending.is_dir():
        for p in pending.iterdir():
            head = p.name.split("-", 1)[0]
            if head.isdigit() and int(head) <= commit.batch:
                p.unlink(missing_ok=True)


def commit_of(log: DeltaLog, sink_id: str, batch: int) -> SinkCommit:
    """The offsets of `batch` of `sink_id`: from the kept JSON, else from the commit's userMetadata."""
    kept = offsets_dir(log.table, sink_id) / f"{batch}.json"
    if kept.exists():
        return SinkCommit.from_json(kept.read_text(), str(kept))
    version = log.find_txn_commit(app_id(sink_id), batch)
    meta = log.user_metadata(version) if version is not None else None
    if meta is None:
        raise DeltaLogError(
            f"{log.table}: sink {sink_id!r} committed batch {batch}, but neither {kept} nor the commit's "
            "userMetadata holds its offsets (the commit file was cleaned up before the offsets were kept)")
    commit = SinkCommit.from_json(meta, f"{log.table} version {version} userMetadata")
    materialize(log.table, commit)
    return commit


def committed_positions(table: str | Path) -> dict[str, SinkCommit]:
    """The last committed batch of every kafka-spark sink of the table ({} for a new table)."""
    log = DeltaLog(table)
    if not log.exists():
        return {}
    return {txn.app_id[len(APP_PREFIX):]: commit_of(log, txn.app_id[len(APP_PREFIX):], txn.version)
            for txn in log.transactions().values() if txn.app_id.startswith(APP_PREFIX)}


def committed_position(table: str | Path, sink_id: str) -> SinkCommit | None:
    """The last committed batch of one sink, or None if it has never committed to the table."""
    log = DeltaLog(table)
    if not log.exists():
        return None
    txn = log.transactions().get(app_id(sink_id))
    return commit_of(log, sink_id, txn.version) if txn else None


def now_ms() -> int:
    return int(time.time() * 1000)

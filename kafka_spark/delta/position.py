"""The committed Kafka position of a Delta table: what each sink has loaded, read from the table alone.

Every load commits its rows with Delta's `txn` action (`txnAppId` = "kafka-spark/<sink id>",
`txnVersion` = the batch number) and `userMetadata` holding the batch's offsets. `txn` survives
checkpoints and log cleanup; `userMetadata` does not, so after each commit the same JSON is also
kept at `<table>/_kafka_spark/offsets/<sink id>/<batch>.json`, written from the committed truth only,
on the table's own store (see table_files.py). A table's sinks are the directories under
`_kafka_spark/offsets/`: each sink writes its pending record there before its first commit (Delta's log
can be asked a `txn` version by id, not for the list of ids).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.delta.location import TableLocation, locate
from kafka_spark.delta.table_state import TableState, local_path
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
    """One committed batch of a sink: the end offsets (next offset to read) of every partition it covers.

    `dead_letters`: how many of the batch's records went to the dead-letter table instead of the table.
    """

    sink_id: str
    batch: int
    offsets: dict[TopicPartition, int]
    start_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    run_id: str = ""
    records: int = 0
    committed_at_ms: int = 0
    dead_letters: int = 0

    def to_json(self) -> str:
        return json.dumps({
            "kafka_spark": FORMAT_VERSION, "sink": self.sink_id, "batch": self.batch, "run": self.run_id,
            "records": self.records, "at": self.committed_at_ms, "dead_letters": self.dead_letters,
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
                dead_letters=int(raw.get("dead_letters", 0)),
                offsets=offsets_from_json(json.dumps(raw["offsets"]), where),
                start_offsets=offsets_from_json(json.dumps(raw.get("start", {})), where),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise DeltaLogError(f"{where}: not a kafka-spark offsets record ({exc})") from None


OFFSETS = "_kafka_spark/offsets"


def _located(table: str | os.PathLike[str] | TableLocation) -> TableLocation:
    location = locate(table)
    assert location is not None  # without a session a name is refused, not looked up
    return location


def offsets_dir(table: str | Path, sink_id: str) -> Path:
    """The kept-offsets directory of a sink of a table on a local or mounted path."""
    path = local_path(table)
    if path is None:
        raise ConfigError(f"table {table}: not a local path")
    return path / OFFSETS / sink_id


def write_pending(table: str | os.PathLike[str] | TableLocation, commit: SinkCommit) -> str:
    """Record a batch about to be committed (kept for diagnosis; never read as truth); where it went."""
    files = _located(table).files
    rel = f"{OFFSETS}/{commit.sink_id}/pending/{commit.batch}-{commit.run_id}.json"
    files.write_text(rel, commit.to_json())
    return files.describe(rel)


def materialize(table: str | os.PathLike[str] | TableLocation, commit: SinkCommit) -> None:
    """Keep a committed batch's offsets beside the table, and drop pending records up to it."""
    files = _located(table).files
    sink_dir = f"{OFFSETS}/{commit.sink_id}"
    files.write_text(f"{sink_dir}/{commit.batch}.json", commit.to_json())
    for name in files.list_files(f"{sink_dir}/pending"):
        head = name.split("-", 1)[0]
        if head.isdigit() and int(head) <= commit.batch:
            files.delete(f"{sink_dir}/pending/{name}")


def sink_ids(table: str | os.PathLike[str] | TableLocation) -> list[str]:
    """The ids of the sinks that have written to the table (or tried to)."""
    return [name for name in _located(table).files.list_dirs(OFFSETS) if _SINK_ID.match(name)]


def _names_batch(user_metadata: object, sink_id: str, batch: int) -> TypeGuard[str]:
    """Whether a commit's userMetadata records `batch` of `sink_id` (other writers' can be any text)."""
    if not isinstance(user_metadata, str) or '"kafka_spark"' not in user_metadata:
        return False
    try:
        raw = json.loads(user_metadata)
    except ValueError:
        return False
    return isinstance(raw, dict) and raw.get("sink") == sink_id and raw.get("batch") == batch


def logged_commit(state: TableState, sink_id: str, batch: int, since: int) -> tuple[SinkCommit, dict[str, Any]] | None:
    """`batch` of `sink_id` and its commitInfo, if a retained commit from version `since` on holds it.

    Delta skips a write whose `txn` is already recorded, so one commit at most holds a given batch.
    """
    for info in state.commit_infos(since):
        meta = info.get("userMetadata")
        if _names_batch(meta, sink_id, batch):
            return SinkCommit.from_json(meta, f"{state.location} commitInfo of batch {batch}"), info
    return None


# Commits searched (newest first) for a batch whose kept offsets are missing: its commit is nearly always
# among the last few, so the whole retained log is read only when it is not.
_SEARCH_WINDOWS = (16, 256)


def commit_of(location: TableLocation, state: TableState, sink_id: str, batch: int) -> SinkCommit:
    """The offsets of `batch` of `sink_id`: from the kept JSON, else from the commit's userMetadata."""
    kept = f"{OFFSETS}/{sink_id}/{batch}.json"
    text = location.files.read_text(kept)
    if text is not None:
        return SinkCommit.from_json(text, location.files.describe(kept))
    latest = state.version if state.version is not None else -1
    for since in sorted({max(latest - w + 1, 0) for w in _SEARCH_WINDOWS} | {0}, reverse=True):
        found = logged_commit(state, sink_id, batch, since)
        if found is not None:
            materialize(location, found[0])
            return found[0]
    raise DeltaLogError(
        f"{location}: sink {sink_id!r} committed batch {batch}, but neither {location.files.describe(kept)} nor "
        "the commit's userMetadata holds its offsets (the commit file was cleaned up before the offsets were kept)")


def committed_positions(table: str | os.PathLike[str] | TableLocation, conf: Any = None) -> dict[str, SinkCommit]:
    """The last committed batch of every kafka-spark sink of the table ({} for a new table).

    `table` is a path, a store URI, a catalog name (with a SparkSession as `conf`) or a `TableLocation`;
    `conf` reaches its store: a SparkSession, a mapping of Hadoop settings (`fs.s3a.*`), or None.
    """
    location = locate(table, conf)
    if location is None:
        return {}
    state = location.state()
    if state.refresh() is None:
        return {}
    ids = sink_ids(location)
    batches = state.txn_versions(app_id(s) for s in ids)
    return {s: commit_of(location, state, s, batches[app_id(s)]) for s in ids if app_id(s) in batches}


def committed_position(table: str | os.PathLike[str] | TableLocation, sink_id: str,
                       conf: Any = None) -> SinkCommit | None:
    """The last committed batch of one sink, or None if it has never committed to the table (see
    `committed_positions` for `table` and `conf`)."""
    location = locate(table, conf)
    if location is None:
        return None
    state = location.state()
    if state.refresh() is None:
        return None
    batch = state.txn_versions([app_id(sink_id)]).get(app_id(sink_id))
    return commit_of(location, state, sink_id, batch) if batch is not None else None


def sink_positions(location: TableLocation | None, sink_id: str) -> tuple[SinkCommit | None, list[SinkCommit]]:
    """The sink's last commit to the table and the other sinks' (None and [] for a table not created yet)."""
    if location is None:
        return None, []
    positions = committed_positions(location)
    # A sink whose kept-offsets directory is gone is still found by its `txn` in the log.
    previous = positions.pop(sink_id, None) or committed_position(location, sink_id)
    return previous, list(positions.values())


def now_ms() -> int:
    return int(time.time() * 1000)

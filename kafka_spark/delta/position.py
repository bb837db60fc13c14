"""The committed Kafka position of a Delta table: what each sink has loaded, read from the table alone.

Every load commits its rows with Delta's `txn` action (`txnAppId` = "kafka-spark/<sink id>",
`txnVersion` = the batch number) and `userMetadata` holding the batch's offsets (`SinkCommit`, in
sink/position.py). `txn` survives checkpoints and log cleanup; `userMetadata` does not, so the same JSON
is also kept beside the table (sink/position.py); Delta's log can be asked a `txn` version by id, not for
the list of ids, so a table's sinks are those that kept a record there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.delta.location import TableLocation, locate
from kafka_spark.delta.table_state import TableState
from kafka_spark.errors import ConfigError
from kafka_spark.sink.position import (
    OFFSETS,
    SinkCommit,
    app_id,
    keep_committed,
    keep_pending,
    kept_commit,
    kept_sink_ids,
    names_batch,
)
from kafka_spark.sink.table_files import local_path


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
    """Record a batch about to be committed to the table (kept for diagnosis; never read as truth)."""
    return keep_pending(_located(table).files, commit)


def materialize(table: str | os.PathLike[str] | TableLocation, commit: SinkCommit) -> None:
    """Keep a committed batch's offsets beside the table, and drop pending records up to it."""
    keep_committed(_located(table).files, commit)


def logged_commit(state: TableState, sink_id: str, batch: int, since: int) -> tuple[SinkCommit, dict[str, Any]] | None:
    """`batch` of `sink_id` and its commitInfo, if a retained commit from version `since` on holds it.

    Delta skips a write whose `txn` is already recorded, so one commit at most holds a given batch.
    """
    for info in state.commit_infos(since):
        meta = info.get("userMetadata")
        if names_batch(meta, sink_id, batch):
            return SinkCommit.from_json(meta, f"{state.location} commitInfo of batch {batch}"), info
    return None


# Commits searched (newest first) for a batch whose kept offsets are missing: its commit is nearly always
# among the last few, so the whole retained log is read only when it is not.
_SEARCH_WINDOWS = (16, 256)


def commit_of(location: TableLocation, state: TableState, sink_id: str, batch: int) -> SinkCommit:
    """The offsets of `batch` of `sink_id`: from the kept JSON, else from the commit's userMetadata."""
    kept = kept_commit(location.files, sink_id, batch)
    if kept is not None:
        return kept
    latest = state.version if state.version is not None else -1
    for since in sorted({max(latest - w + 1, 0) for w in _SEARCH_WINDOWS} | {0}, reverse=True):
        found = logged_commit(state, sink_id, batch, since)
        if found is not None:
            materialize(location, found[0])
            return found[0]
    where = location.files.describe(f"{OFFSETS}/{sink_id}/{batch}.json")
    raise DeltaLogError(
        f"{location}: sink {sink_id!r} committed batch {batch}, but neither {where} nor "
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
    ids = kept_sink_ids(location.files)
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

"""Compaction and vacuum of Delta tables: a stream's small files rewritten into large ones, in commits that change
no data and leave every sink's position where it is.

A stream with a 1-second trigger adds a few files to its table every second, tens of thousands a day, and a
reader then opens thousands of files to read a few megabytes. `compact_table` rewrites a table's small files into
files of about `target_size` bytes (rewrite.py): one commit that removes the small files and adds the large ones,
every action `dataChange=false`, with no `txn` action and no `userMetadata`. So:

- readers see the same rows at every version, and a streaming reader of the table skips the commit;
- every sink's position stays: its last batch is the `txn` version of the snapshot, which the rewrite does not
  change, and that batch's offsets are in the kept JSON or in the batch's own commit, which position.py finds
  behind any number of rewrites;
- an append and a rewrite do not conflict (an append reads no file), so a load or a stream that commits while
  another process compacts still commits, and the compaction's commit waits its appends out; two compactions
  of one table never both rewrite a file (rewrite.py); a stream compacts its own tables between micro-batches,
  in the query's thread (`compact_after_commit`), so none of its own commits runs beside one.

`vacuum_table` deletes, with delta-rs, the files that rewrites (and other removals) took out of the table longer
ago than the retention, as Delta's VACUUM does; with `full`, also the files no commit names (those of a write or
a compaction killed before its commit). Paths that begin with `_` (the kept offsets, a stream's checkpoint) are
never touched.

A kill is safe at any point: before the rewrite's commit, its new files are in no commit (readers and resumes do
not see them; `vacuum_table(full=True)` deletes them later); after it, the table holds the same rows.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_spark.delta.direct_commit import maintain_log
from kafka_spark.delta.errors import MaintenanceError, NoTableError
from kafka_spark.delta.location import TableLocation, locate, path_location
from kafka_spark.delta.rewrite import FileAccess, commit_rewrite, no_hooks, plan_bins, refuse_features, write_bin
from kafka_spark.errors import ConfigError
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.results import Compaction
from kafka_spark.sink.table_files import local_path

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from kafka_spark.delta.writer_choice import WriterChoice
    from kafka_spark.sink.options import Compacting

log = logging.getLogger(__name__)

# The target when neither the caller nor the table's `delta.targetFileSize` gives one (delta-rs's and Spark's).
DEFAULT_TARGET_SIZE = 100 * 1024 * 1024
_MIN_RETENTION = re.compile(r"greater than (\d+) hours")


@dataclass
class Vacuum:
    """What a vacuum of one table deleted (`dry_run`: would delete): the files, as paths under the table."""

    table: str
    files: list[str] = field(default_factory=list)
    retention_hours: int | None = None
    full: bool = False
    dry_run: bool = True
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {"table": self.table, "files": len(self.files), "retention_hours": self.retention_hours,
                "full": self.full, "dry_run": self.dry_run, "seconds": round(self.seconds, 3),
                "paths": self.files}


def open_table(table: str | os.PathLike[str] | TableLocation, conf: Any = None) -> tuple[TableLocation, DeltaTable]:
    """The table's location and its latest snapshot; ConfigError when no Delta table is there. `conf` reaches its
    store: a SparkSession (needed for a catalog name), a mapping of Hadoop settings, or None."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    location = locate(table, conf)
    if location is None:
        raise ConfigError(f"{table}: the catalog has no such table")
    try:
        return location, DeltaTable(location.delta_rs_uri or location.path,
                                    storage_options=dict(location.storage_options) or None)
    except TableNotFoundError:
        raise NoTableError(f"{location}: no Delta table there (no commit in its _delta_log)") from None
    except DeltaError as exc:
        raise MaintenanceError(f"{location}: the Delta table cannot be opened: {exc}") from None


def compact_table(table: str | os.PathLike[str] | TableLocation, conf: Any = None, target_size: int | None = None,
                  dry_run: bool = False) -> Compaction:
    """Rewrite the table's files smaller than `target_size` bytes (None: the table's `delta.targetFileSize`, else
    100 MiB) into files of about that size, partition by partition, in one commit that changes no data (see the
    module docstring). `dry_run`: write and commit nothing, and say what a compaction would rewrite."""
    started = time.monotonic()
    location, dt = open_table(table, conf)
    refuse_features(location, dt)
    target = target_size or int(dt.metadata().configuration.get("delta.targetFileSize") or DEFAULT_TARGET_SIZE)
    before, bins = plan_bins(dt, target)
    removed = sum(len(b.files) for b in bins)
    if dry_run or not bins:
        return Compaction(str(location), before, before - removed + len(bins), removed, len(bins), dry_run=dry_run,
                          seconds=time.monotonic() - started)
    files = FileAccess(location)
    try:
        written = [write_bin(files, dt, b) for b in bins]
    except OSError as exc:
        raise MaintenanceError(f"{location}: the compaction could not rewrite the table's files: {exc}") from None
    crash_point("compact-before-commit")
    version = commit_rewrite(location, dt, bins, written)
    if version is None:
        files.delete(w.path for w in written)
        raise MaintenanceError(f"{location}: another writer removed files this compaction rewrote (another "
                               "compaction, a DELETE or a MERGE) before it committed; nothing was committed")
    _, latest = open_table(location)
    maintain_log(latest)
    after = before - removed + len(written)
    log.info("%s: compacted %d files into %d (%d -> %d files)", location, removed, len(written), before, after)
    return Compaction(str(location), before, after, removed, len(written), version,
                      seconds=time.monotonic() - started)


def vacuum_table(table: str | os.PathLike[str] | TableLocation, conf: Any = None, retention_hours: int | None = None,
                 dry_run: bool = True, retention_check: bool = True, full: bool = False) -> Vacuum:
    """Delete the files removed from the table longer than `retention_hours` ago (None: the table's
    `delta.deletedFileRetentionDuration`, else 7 days); `full`: also files older than that which no commit names.
    Below the table's retention the vacuum is refused (ConfigError) unless `retention_check` is False: readers of
    older versions, and with `full` writers whose files are not committed yet, can lose their files. `dry_run`
    (the default) deletes nothing and lists what would go."""
    from deltalake.exceptions import DeltaError

    started = time.monotonic()
    location, dt = open_table(table, conf)
    hooks = no_hooks()
    try:
        listed = dt.vacuum(retention_hours=retention_hours, dry_run=True, enforce_retention_duration=retention_check,
                           full=full, post_commithook_properties=hooks)
        # Files an earlier vacuum deleted stay listed until a checkpoint drops their removal from the log.
        files = _present(location, listed)
        if files and not dry_run:
            dt.vacuum(retention_hours=retention_hours, dry_run=False, enforce_retention_duration=retention_check,
                      full=full, post_commithook_properties=hooks)
            maintain_log(dt)
    except DeltaError as exc:
        found = _MIN_RETENTION.search(str(exc))
        if found:
            raise ConfigError(
                f"{location}: a retention of {retention_hours} hours is below the table's "
                f"delta.deletedFileRetentionDuration ({found.group(1)} hours): files that readers of older "
                "versions still read would be deleted. Give at least that, lower the table's setting, or turn the "
                "retention check off when nothing reads or writes the table meanwhile") from None
        raise MaintenanceError(f"{location}: delta-rs could not vacuum the table: {exc}") from None
    if files and not dry_run:
        log.info("%s: vacuum deleted %d files", location, len(files))
    return Vacuum(str(location), files, retention_hours, full, dry_run, time.monotonic() - started)


def _present(location: TableLocation, paths: list[str]) -> list[str]:
    """The paths (under the table, or absolute) of files that exist, on a local table; all of them elsewhere,
    where asking costs a request per file."""
    root = local_path(location.path)
    if root is None:
        return sorted(paths)
    return sorted(p for p in paths if (Path(p) if os.path.isabs(p) else root / p).exists())


def compact_after_commit(location: TableLocation, settings: Compacting, writer: WriterChoice | None) -> Compaction:
    """A stream's compaction of a table it has just committed to, between two micro-batches (the query's own
    thread), then its vacuum when `settings` asks for one; the table's direct writer is brought up to the new
    version, so its next commit starts from it. A kill anywhere here comes after the micro-batch's commit, so the
    restarted query replays the micro-batch, which the table already holds, and writes nothing twice."""
    crash_point("before-compact")
    result = compact_table(location, target_size=settings.target_size)
    crash_point("after-compact")
    if settings.vacuum_retention_hours is not None:
        started = time.monotonic()
        result.vacuumed = len(vacuum_table(location, retention_hours=settings.vacuum_retention_hours,
                                           dry_run=False).files)
        result.seconds += time.monotonic() - started
    target = writer.target if writer is not None else None
    if target is not None and target.table is not None:
        target.table.update_incremental()
    return result


def tables_under(root: str, conf: Any = None) -> list[str]:
    """The Delta tables directly under `root` (`<root>/<name>/_delta_log`), by path; names that begin with `_` or
    `.` (checkpoints, kept offsets) are passed over. `conf`: Hadoop settings (a mapping) or None."""
    files = path_location(root, conf).files
    base = root.rstrip("/")
    return [f"{base}/{name}" for name in files.list_dirs("")
            if not name.startswith(("_", ".")) and "_delta_log" in files.list_dirs(name)]

"""Compaction of Iceberg tables: a stream's small data files rewritten into large ones, in one snapshot that changes
no data and leaves every sink's position where it is.

`compact_iceberg_table` plans from the table's current snapshot (`plan_rewrite`): in each partition of the
table's current spec, its Parquet data files under `target_size` bytes that no delete file applies to, oldest
first, in groups of about `target_size` bytes (a group of one file is left as it is). Each group's rows are read
with pyiceberg's scan (projected by field id onto the current schema) and written as the direct writer writes its
files (data_files.py: the table's field ids, its sort order within each file, pyiceberg's column statistics from
the footers, the table's location provider's paths), into files of about `target_size` bytes (`rewrite_files`).
One snapshot then deletes the group's files and adds the new ones (`commit_rewrite`), with operation "replace"
(Iceberg's operation for a compaction: Spark's streaming reads of the table skip it) and nothing in its summary
but pyiceberg's counts. So:

- readers see the same rows at every snapshot;
- every sink's position stays: a position is the newest record in the snapshot ancestry (position.py), and this
  snapshot holds none, so the sink's last snapshot behind it still answers, and a load or stream resumes there;
- the commit lands only on a snapshot in which every file it deletes is still live with no delete file applying
  to it, and that has the spec it planned with: pyiceberg retries nothing here (the catalog's optimistic commit
  fails when another writer came first), and on such a failure the table is read again, the files are checked
  again and the same rewrite is committed on the new snapshot, which keeps every file the other writer added.
  When another writer deleted or rewrote one of the files (or added deletes to one), nothing is committed, the
  new files are deleted and CompactionError says why.

Not done: files that delete files apply to (position or equality deletes) are left as they are, as are files of
an older spec, files that are not Parquet and format-3 tables (row lineage); manifests are not rewritten, and no
snapshot is expired nor orphan file removed (Iceberg's own maintenance does those).

A kill is safe at any point: before the commit, the new files are in no snapshot (orphans, which Iceberg's
orphan-file removal deletes); after it, the table holds the same rows.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.batch_append import no_retries, wait_to_retry
from kafka_spark.iceberg.catalog import IcebergCatalog, as_catalog
from kafka_spark.iceberg.data_files import DataFileSpec, data_files, file_spec, write_data_files
from kafka_spark.iceberg.direct_append import table_reason
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink.crash import crash_point
from kafka_spark.sink.errors import SinkError
from kafka_spark.sink.results import Compaction

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from kafka_spark.sink.options import Compacting

log = logging.getLogger(__name__)

# The target when neither the caller nor the table's `write.target-file-size-bytes` gives one: Delta's default
# (delta/compaction.py), so both formats' streams compact alike.
DEFAULT_TARGET_SIZE = 100 * 1024 * 1024
TARGET_PROPERTY = "write.target-file-size-bytes"
TOTAL_FILES = "total-data-files"  # a snapshot summary's count of the table's data files
COMMIT_ATTEMPTS = 20  # other writers' commits (appends) that a compaction's commit waits out
_SPEC_CHANGED = "the table's partition spec changed"


class CompactionError(SinkError):
    """A compaction of an Iceberg table failed; nothing of it was committed."""


@dataclass
class FileGroup:
    """Small data files of one partition (`partition`: its values), rewritten together; oldest first."""

    partition: tuple[Any, ...]
    files: list[DataFile] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(f.file_size_in_bytes for f in self.files)


@dataclass
class RewritePlan:
    """What a compaction rewrites: the groups of the snapshot it planned from, the spec they are in, the table's
    live data files then, and the target size of the new files."""

    location: IcebergLocation
    snapshot_id: int | None
    spec_id: int
    files_before: int
    target: int
    groups: list[FileGroup] = field(default_factory=list)

    @property
    def removed(self) -> list[DataFile]:
        return [f for g in self.groups for f in g.files]


def _location(table: str | IcebergLocation, catalog: IcebergCatalog | Mapping[str, str] | str | None
              ) -> IcebergLocation:
    if isinstance(table, IcebergLocation):
        return table
    settings = as_catalog(catalog)
    return IcebergLocation(settings, settings.identifier(table))


def _live(table: Table) -> tuple[list[tuple[int, DataFile]], set[str]]:
    """The live data files of the current snapshot with their data sequence numbers, and the paths of those a
    delete file applies to."""
    from pyiceberg.manifest import DataFileContent, ManifestContent

    snapshot = table.current_snapshot()
    if snapshot is None:
        return [], set()
    files: list[tuple[int, DataFile]] = []
    deletes = False
    for manifest in snapshot.manifests(table.io):
        if manifest.content == ManifestContent.DELETES:
            deletes = deletes or manifest.has_added_files() or manifest.has_existing_files()
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            if entry.data_file.content == DataFileContent.DATA:
                files.append((entry.sequence_number or 0, entry.data_file))
    if not deletes:
        return files, set()
    # Which files the delete files apply to is the scan planner's business (sequence numbers, partitions).
    return files, {t.file.file_path for t in table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
                   if t.delete_files}


def plan_rewrite(location: IcebergLocation, target_size: int | None = None) -> RewritePlan:
    """The groups a compaction of the table's current snapshot rewrites (see the module docstring); CompactionError
    for a table whose files it cannot rewrite."""
    from pyiceberg.exceptions import NoSuchTableError
    from pyiceberg.manifest import FileFormat

    try:
        table = location.load()
    except NoSuchTableError:
        raise ConfigError(f"{location}: the catalog has no such table") from None
    reason = table_reason(table)
    if table.metadata.format_version > 2:
        reason = f"it is a format-{table.metadata.format_version} table (row lineage is not carried over)"
    if reason is not None:
        raise CompactionError(f"{location}: not compacted, since {reason}; compact it with Spark's "
                              "rewrite_data_files")
    given = table.metadata.properties.get(TARGET_PROPERTY)
    target = target_size or (int(given) if given else DEFAULT_TARGET_SIZE)
    if target < 1:
        raise ConfigError(f"compact_target_size: must be at least 1 byte, got {target}")
    snapshot = table.current_snapshot()
    spec_id = table.metadata.default_spec_id
    live, with_deletes = _live(table)
    by_partition: dict[tuple[Any, ...], list[tuple[int, DataFile]]] = {}
    for sequence, file in live:
        if (file.file_size_in_bytes < target and file.spec_id == spec_id and file.file_format == FileFormat.PARQUET
                and file.file_path not in with_deletes):
            key = tuple(file.partition[i] for i in range(len(file.partition)))
            by_partition.setdefault(key, []).append((sequence, file))
    groups: list[FileGroup] = []
    for key, files in by_partition.items():
        current: FileGroup | None = None
        for _, file in sorted(files, key=lambda f: (f[0], f[1].file_path)):
            if current is None or current.size + file.file_size_in_bytes > target:
                current = FileGroup(key)
                groups.append(current)
            current.files.append(file)
    return RewritePlan(location, snapshot.snapshot_id if snapshot is not None else None, spec_id, len(live), target,
                       [g for g in groups if len(g.files) > 1])


def _group_rows(table: Table, group: FileGroup, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The group's rows, file by file in the group's order, as the table's current schema has them (`schema`)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
    for file in group.files:
        for batch in scan.to_record_batches([FileScanTask(file)]):
            # One type per column for all files: the scan gives a column a file predates as a large type.
            yield batch if batch.schema.equals(schema) else batch.cast(schema)


def _written(batches: Iterator[pa.RecordBatch], spec: DataFileSpec, prefix: str) -> list[dict[str, Any]]:
    """The file rows (data_files.FILE_ROWS_SCHEMA) of the files `batches` are written as; a sorted table's rows
    in one run, so that each group makes one sorted file rather than one per row group."""
    if spec.sort_order() is not None:
        collected = [pa.Table.from_batches([b]) for b in batches]
        whole = pa.concat_tables(collected, promote_options="permissive").combine_chunks() if collected else None
        batches = iter(whole.to_batches() if whole is not None else [])
    return [row for out in write_data_files(batches, spec, prefix) for row in out.to_pylist()]


def rewrite_files(plan: RewritePlan) -> list[DataFile]:
    """Write each group's rows as new data files of about the plan's target size; their `DataFile`s. A failure
    deletes the files written so far."""
    table = plan.location.load()
    if table.metadata.default_spec_id != plan.spec_id:
        raise CompactionError(f"{plan.location}: {_SPEC_CHANGED} after the compaction planned; nothing was written")
    rows_schema = table.schema().as_arrow()
    spec = file_spec(table, rows_schema)
    # The target is the plan's (the direct writer's is the table's own, 512 MiB by default).
    spec = replace(spec, properties={**spec.properties, TARGET_PROPERTY: str(plan.target)})
    written: list[dict[str, Any]] = []
    try:
        for i, group in enumerate(plan.groups):
            written += _written(_group_rows(table, group, rows_schema), spec, f"compact-{i:05d}")
    except BaseException:
        _delete(table, [row["path"] for row in written])
        raise
    files = data_files(written, spec)
    records = sum(f.record_count for f in files)
    expected = sum(f.record_count for f in plan.removed)
    if records != expected:  # never commit a rewrite that would change the table's rows
        _delete(table, [f.file_path for f in files])
        raise CompactionError(f"{plan.location}: the rewrite read {records} rows from files that hold {expected}; "
                              "nothing was committed")
    return files


@functools.cache
def _replace_files() -> type:
    """pyiceberg's overwrite producer, its snapshot labelled "replace" (pyiceberg's summary totals refuse that
    operation, so they are computed as for an overwrite, which adds and deletes files the same way)."""
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    class ReplaceFiles(_OverwriteFiles):
        def _summary(self, snapshot_properties: dict[str, str] | None = None) -> Summary:
            summary = super()._summary(snapshot_properties or {})
            return Summary(Operation.REPLACE, **summary.additional_properties)

    return ReplaceFiles


def _still_there(table: Table, plan: RewritePlan) -> str | None:
    """Why the plan can no longer be committed on the table as it is now, or None."""
    # A new spec makes no snapshot: it is checked whether or not other snapshots landed.
    if table.metadata.default_spec_id != plan.spec_id:
        return _SPEC_CHANGED
    current = table.current_snapshot()
    if current is not None and current.snapshot_id == plan.snapshot_id:
        return None
    live, with_deletes = _live(table)
    paths = {f.file_path for _, f in live}
    gone = [f.file_path for f in plan.removed if f.file_path not in paths]
    if gone:
        return (f"another writer removed {len(gone)} of the files it rewrites (another compaction, a delete, an "
                "overwrite)")
    deleted = [f.file_path for f in plan.removed if f.file_path in with_deletes]
    if deleted:
        return f"another writer deleted rows of {len(deleted)} of the files it rewrites"
    return None


def commit_rewrite(plan: RewritePlan, added: list[DataFile]) -> Snapshot:
    """Commit one "replace" snapshot that deletes the plan's files and adds `added`, on the snapshot the plan read
    or, when other writers committed meanwhile, on the newest one if it still holds every file the plan rewrites
    with no deletes; that snapshot. CompactionError when it cannot land (nothing committed; the caller deletes
    `added`)."""
    from pyiceberg.exceptions import CommitFailedException, ValidationException
    from pyiceberg.table.snapshots import Operation

    for attempt in range(COMMIT_ATTEMPTS):
        table = plan.location.load()
        why = _still_there(table, plan)
        if why is not None:
            raise CompactionError(f"{plan.location}: {why} before the compaction's commit; nothing was committed")
        # No pyiceberg retry: a commit on a snapshot this has not checked must not land.
        txn = no_retries(table).transaction()
        producer = _replace_files()(operation=Operation.OVERWRITE, transaction=txn, io=table.io)
        try:
            with producer as rewrite:
                for file in plan.removed:
                    rewrite.delete_data_file(file)
                for file in added:
                    rewrite.append_data_file(file)
        except Exception as exc:  # staged only: nothing reached the catalog
            raise CompactionError(f"{plan.location}: pyiceberg refused the compaction's snapshot: "
                                  f"{type(exc).__name__}: {exc}") from exc
        crash_point("compact-staged")
        try:
            committed = txn.commit_transaction()
        except (CommitFailedException, ValidationException) as exc:  # not committed: read the table again
            wait_to_retry(plan.location, exc, attempt)
            continue
        snapshot = committed.metadata.snapshot_by_id(producer.snapshot_id)
        assert snapshot is not None  # the catalog's metadata after the commit holds it
        return snapshot
    raise CompactionError(f"{plan.location}: other writers committed {COMMIT_ATTEMPTS} times while the compaction "
                          "tried to commit; nothing was committed, try again")


def _delete(table: Table, paths: list[str]) -> None:
    for path in paths:
        try:
            table.io.delete(path)
        except OSError as exc:  # an orphan left behind: Iceberg's orphan-file removal finds it
            log.info("%s: could not delete %s: %s", ".".join(table.name()), path, exc)


def compact_iceberg_table(table: str | IcebergLocation, catalog: IcebergCatalog | Mapping[str, str] | str | None = None,
                          target_size: int | None = None, dry_run: bool = False) -> Compaction:
    """Rewrite the Iceberg table's data files smaller than `target_size` bytes (None: the table's
    `write.target-file-size-bytes`, else 100 MiB) into files of about that size, partition by partition, in one
    "replace" snapshot that changes no data and no sink's position (see the module docstring). `table`: an
    `IcebergLocation`, or `namespace.table` of `catalog`. `dry_run`: write and commit nothing, and say what a
    compaction would rewrite."""
    started = time.monotonic()
    location = _location(table, catalog)
    plan = plan_rewrite(location, target_size)
    removed = len(plan.removed)
    if dry_run or not plan.groups:
        return Compaction(str(location), plan.files_before, plan.files_before - removed + len(plan.groups), removed,
                          len(plan.groups), dry_run=dry_run, seconds=time.monotonic() - started)
    try:
        added = rewrite_files(plan)
    except OSError as exc:
        raise CompactionError(f"{location}: the compaction could not rewrite the table's files: {exc}") from None
    crash_point("compact-before-commit")
    try:
        snapshot = commit_rewrite(plan, added)
    except CompactionError:
        _delete(location.load(), [f.file_path for f in added])
        raise
    # The files of the snapshot committed, which may hold other writers' files added since the plan.
    total = snapshot.summary.get(TOTAL_FILES) if snapshot.summary is not None else None
    after = int(total) if total else plan.files_before - removed + len(added)
    log.info("%s: compacted %d files into %d (%d -> %d files)", location, removed, len(added), plan.files_before,
             after)
    return Compaction(str(location), plan.files_before, after, removed, len(added), snapshot.sequence_number,
                      seconds=time.monotonic() - started)


def check_compacting(settings: Compacting) -> None:
    """ConfigError for compaction settings an Iceberg table does not take (a vacuum)."""
    if settings.vacuum_retention_hours is not None:
        raise ConfigError("vacuum_retention_hours: Iceberg tables are not vacuumed by the stream; expire their "
                          "snapshots and remove orphan files with Iceberg's own maintenance")


def compact_after_commit(location: IcebergLocation, settings: Compacting) -> Compaction:
    """A stream's compaction of a table it has just committed to, between two micro-batches (the query's own
    thread). A kill anywhere here comes after the micro-batch's commit, so the restarted query replays the
    micro-batch, which the table already holds, and writes nothing twice."""
    check_compacting(settings)
    crash_point("before-compact")
    result = compact_iceberg_table(location, target_size=settings.target_size)
    crash_point("after-compact")
    return result

"""A compaction's rewrite of a Delta table's small files, and its commit, which lands only on the table it read.

delta-rs's own `optimize.compact` is not used for this: it commits on top of whatever version is newest when it
finishes, without checking the commits that landed meanwhile when they change no data, so two compactions of one
table that overlap (two streams of a table, a stream and `kafka-spark optimize`, or Delta's OPTIMIZE on Spark)
both commit, and the rows of the files both rewrote are then in the table twice (deltalake 1.6.6). Here the
files are planned from one snapshot, rewritten with pyarrow (statistics as Delta on Spark writes them,
sink/parquet/stats.py) and committed through delta-rs's transaction API with no retry of its own: the commit
lands on the very version it was planned on, or, when another commit came first, again on the newest version
if every file it removes is still in the table (appends meanwhile change nothing), and otherwise not at all (its
files are deleted). A reader never sees a row twice, whoever compacts the table at the same time.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_spark.delta.errors import MaintenanceError
from kafka_spark.sink.parquet.files import ROW_GROUP_BYTES
from kafka_spark.sink.parquet.partition_values import partition_value
from kafka_spark.sink.parquet.stats import Stats, leaf_columns, stats_columns
from kafka_spark.sink.table_files import local_path

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from kafka_spark.delta.location import TableLocation

# What a rewrite copies rows of unchanged: the writer features it honours by doing so. Column mapping only in
# its mode `none` (the files' column names are the table's), deletion vectors only for files without one.
REWRITABLE = {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "timestampNtz",
              "deletionVectors", "columnMapping"}
COMMIT_ATTEMPTS = 20  # commits by other writers (appends) that a compaction's commit waits out
CODEC = ("zstd", ".zstd")  # the compacted files' codec and Spark's name for it


@dataclass
class Bin:
    """Small files of one partition (`values`: the partition values as the log records them) rewritten into one
    file in `directory` (relative to the table, `a=1/` or ''); `files`: (path as stored, size) in commit order."""

    values: dict[str, str | None]
    directory: str
    files: list[tuple[str, int]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(size for _, size in self.files)


@dataclass(frozen=True)
class Written:
    """A file a rewrite wrote: its path (relative, as stored), size, statistics (JSON) and modification time."""

    path: str
    size: int
    stats: str
    modified_ms: int


def refuse_features(location: TableLocation, table: DeltaTable) -> None:
    """MaintenanceError for a table whose features a rewrite of its files cannot honour (row tracking, clustering,
    column mapping by name or id, ...): Delta's OPTIMIZE on Spark compacts those."""
    features = set(table.protocol().writer_features or [])
    unknown = sorted(features - REWRITABLE)
    mapping = (table.metadata().configuration.get("delta.columnMapping.mode") or "none").lower()
    if unknown or mapping != "none":
        what = ", ".join(unknown) if unknown else f"column mapping mode {mapping}"
        raise MaintenanceError(f"{location}: the table has {what}, which a compaction here does not rewrite; "
                               "compact it with Delta's OPTIMIZE on Spark")


def plan_bins(table: DeltaTable, target: int) -> tuple[int, list[Bin]]:
    """(the table's active files, the bins to rewrite): in each partition, the files under `target` bytes without a
    deletion vector, oldest first, in bins of about `target` bytes; a bin of one file is left as it is."""
    actions = pa.table(table.get_add_actions(flatten=True))
    partitions = list(table.metadata().partition_columns)
    kinds = dict(leaf_columns(table.schema().to_json()))
    vectors = [c for c in actions.column_names if c.startswith("deletionVector.")]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in actions.to_pylist():
        if row["size_bytes"] < target and not any(row[c] is not None for c in vectors):
            groups.setdefault(tuple(row[f"partition.{c}"] for c in partitions), []).append(row)
    bins: list[Bin] = []
    for key, rows in groups.items():
        values = {c: partition_value(kinds[(c,)], v)[1] for c, v in zip(partitions, key, strict=True)}
        current: Bin | None = None
        for row in sorted(rows, key=lambda r: (r["modification_time"], r["path"])):
            path = unquote(row["path"])  # as stored (the log %-encodes it; delta-rs encodes it again on commit)
            if current is None or current.size + row["size_bytes"] > target:
                current = Bin(values, os.path.dirname(path) + "/" if "/" in path else "")
                bins.append(current)
            current.files.append((path, row["size_bytes"]))
    return actions.num_rows, [b for b in bins if len(b.files) > 1]


class FileAccess:
    """The table's data files through pyarrow: a local directory, or delta-rs's own store client for a store URI
    (the same URI and options as its log)."""

    def __init__(self, location: TableLocation) -> None:
        from pyarrow import fs

        local = local_path(location.path)
        if local is not None:
            self.fs: Any = fs.LocalFileSystem()
            self.base = f"{local}/"
        else:
            from deltalake.fs import DeltaStorageHandler

            uri = location.delta_rs_uri or location.path
            self.fs = fs.PyFileSystem(DeltaStorageHandler(uri, dict(location.storage_options) or None))
            self.base = ""

    def read(self, path: str) -> pa.Table:
        # One file as it is (pq.read_table would make a partition column of its `col=value/` directory).
        with self.fs.open_input_file(f"{self.base}{path}") as source:
            return pq.ParquetFile(source).read()

    def delete(self, paths: Iterable[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(f"{self.base}{path}")


def _conformed(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """A file's rows with the table's columns and types: a column the file predates is null (schema evolution),
    and types are cast (Spark's INT96 timestamps, delta-rs's large strings)."""
    columns = [data.column(f.name).cast(f.type) if f.name in data.column_names else pa.nulls(data.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def write_bin(files: FileAccess, table: DeltaTable, rewrite: Bin) -> Written:
    """The bin's files' rows, in their order, as one Parquet file in the bin's directory, with its statistics."""
    schema_json = table.schema().to_json()
    partitions = set(table.metadata().partition_columns)
    config = table.metadata().configuration
    schema = pa.schema([f for f in pa.schema(table.schema().to_arrow()) if f.name not in partitions])
    tight = "deletionVectors" in set(table.protocol().writer_features or [])
    stats = Stats(schema_json, stats_columns(schema_json, config, partitions), tight)
    path = f"{rewrite.directory}part-{uuid.uuid4()}-c000{CODEC[1]}.parquet"
    if files.base:
        files.fs.create_dir(f"{files.base}{rewrite.directory}", recursive=True)
    with files.fs.open_output_stream(f"{files.base}{path}") as sink:
        writer = pq.ParquetWriter(sink, schema, compression=CODEC[0])
        # Row groups of about ROW_GROUP_BYTES, as the direct writer's: one per small file would keep them small.
        pending: list[pa.Table] = []
        for source, _ in rewrite.files:
            data = _conformed(files.read(source), schema)
            for batch in data.to_batches():
                stats.add(batch)
            pending.append(data)
            if sum(t.nbytes for t in pending) >= ROW_GROUP_BYTES:
                _write_group(writer, pending)
                pending = []
        _write_group(writer, pending)
        writer.close()
        size = sink.tell()
    return Written(path, size, stats.to_json(), int(time.time() * 1000))


def _write_group(writer: pq.ParquetWriter, tables: list[pa.Table]) -> None:
    if tables:
        rows = pa.concat_tables(tables)
        writer.write_table(rows, row_group_size=max(rows.num_rows, 1))


def commit_rewrite(location: TableLocation, read: DeltaTable, bins: list[Bin], written: list[Written]) -> int | None:
    """Commit the rewrite (its files' removal and the new files, all `dataChange=false`) on the snapshot `read`,
    else on the newest one while every file it removes is still there and the schema is the same; the version
    it committed, or None when another writer removed one of its files first (nothing is committed then)."""
    from deltalake import CommitProperties, DeltaTable
    from deltalake.exceptions import CommitFailedError, DeltaError
    from deltalake.transaction import AddAction, RemoveAction

    now = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [
        RemoveAction(path, False, now, size, dict(b.values)) for b in bins for path, size in b.files]
    actions += [AddAction(w.path, w.size, dict(b.values), w.modified_ms, False, w.stats)
                for b, w in zip(bins, written, strict=True)]
    removed = {path for b in bins for path, _ in b.files}
    # Not a blind append: another writer's conflict check must treat the new files as changed data.
    info = {"isBlindAppend": False, "kafkaSparkCompaction": True,
            "operationMetrics": {"numRemovedFiles": str(len(removed)), "numAddedFiles": str(len(written)),
                                 "numRemovedBytes": str(sum(b.size for b in bins)),
                                 "numAddedBytes": str(sum(w.size for w in written))}}
    schema_json, partitions = read.schema().to_json(), list(read.metadata().partition_columns)
    table = read
    for attempt in range(COMMIT_ATTEMPTS):
        if attempt:
            table = DeltaTable(location.delta_rs_uri or location.path,
                               storage_options=dict(location.storage_options) or None)
            active = {unquote(p) for p in pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()}
            if not removed <= active or table.schema().to_json() != schema_json:
                return None
        version = table.version() + 1
        try:
            # No retry inside delta-rs: the commit lands on `version` or fails, and is checked again above.
            table.create_write_transaction(actions, "append", table.schema(), partition_by=partitions or None,
                                           commit_properties=CommitProperties(custom_metadata=info,
                                                                              max_commit_retries=0),
                                           post_commithook_properties=no_hooks())
            return version
        except CommitFailedError:
            time.sleep(min(0.05 * 2 ** attempt, 1.0))
        except DeltaError as exc:
            raise MaintenanceError(f"{location}: delta-rs refused the compaction's commit: {exc}") from None
    raise MaintenanceError(f"{location}: other writers committed {COMMIT_ATTEMPTS} times while the compaction tried "
                           "to commit; nothing was committed, try again")


def no_hooks() -> Any:
    from deltalake import PostCommitHookProperties

    # Checkpoints and log cleanup on Delta on Spark's schedule instead, as after a direct commit (maintain_log).
    return PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)

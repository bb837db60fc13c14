"""The direct writer's task side: one offset range fetched (and decoded) into Parquet files under the table's root.

A task of a `pykafka` read given the internal option `directWriteTo` (see `spark/batch.py`) writes its
range here instead of yielding records, and yields one small row per file it wrote (`FILE_ROWS_DDL`): the
path relative to the table root, its size, record count, modification time and Delta statistics. The
driver commits those files (direct.py); a file no commit references is harmless (VACUUM removes it), as
with Spark's writer.

Statistics are those Delta on Spark writes for data skipping: `numRecords`, then `minValues`, `maxValues`
and `nullCount` of the first `delta.dataSkippingNumIndexedCols` leaf columns (or of
`delta.dataSkippingStatsColumns`), min/max only for numbers, dates, timestamps and strings. Bounds are
only ever wider than the data, never narrower: a string longer than the prefix Delta keeps (32) gets its
prefix as minimum and no maximum, a timestamp's maximum is rounded up to the millisecond Delta stores,
decimals and NaN-holding floats get no bounds. A reader treats a missing bound as unknown.

A record that does not decode (a decoding read keeps the reason in `keyError`/`valueError`) fails the
batch: the task deletes the files it wrote, counts the bad records and yields one row naming the first.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# The rows a direct-writing task yields: one per file; a row with `firstBad` reports bad records instead.
FILE_ROWS_DDL = ("path string, size long, records long, modificationTime long, stats string, "
                 "badRecords long, firstBad string")
FILE_ROWS_SCHEMA = pa.schema([
    pa.field("path", pa.string()), pa.field("size", pa.int64()), pa.field("records", pa.int64()),
    pa.field("modificationTime", pa.int64()), pa.field("stats", pa.string()),
    pa.field("badRecords", pa.int64()), pa.field("firstBad", pa.string()),
])
ERROR_COLUMNS = ("keyError", "valueError")

STRING_PREFIX = 32  # Delta's delta.dataSkippingStringPrefixLength default
_BOUNDED = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}
# One row group per this much Arrow data: fetches come in small batches, and a row group per batch would
# make files slow to read.
ROW_GROUP_BYTES = 64 << 20
TARGET_FILE_BYTES = 128 << 20


@dataclass(frozen=True)
class FileSpec:
    """What a task needs to write a table's files: the root, the table's Delta schema (JSON), the leaf
    columns that get statistics (paths of field names), and whether Delta expects `tightBounds`."""

    root: str
    schema_json: str
    stats_columns: tuple[tuple[str, ...], ...]
    tight_bounds: bool = False
    target_file_bytes: int = TARGET_FILE_BYTES
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def to_json(self) -> str:
        """The spec without the storage options (they travel in their own, redacted, option)."""
        return json.dumps({"root": self.root, "schema": self.schema_json,
                           "stats": [list(p) for p in self.stats_columns], "tight": self.tight_bounds,
                           "target": self.target_file_bytes})

    @classmethod
    def from_json(cls, text: str, storage: str | None = None) -> FileSpec:
        raw = json.loads(text)
        return cls(raw["root"], raw["schema"], tuple(tuple(p) for p in raw["stats"]), bool(raw["tight"]),
                   int(raw["target"]), json.loads(storage) if storage else {})

    def arrow_schema(self) -> pa.Schema:
        from deltalake import Schema

        return pa.schema(Schema.from_json(self.schema_json).to_arrow())


def leaf_columns(schema_json: str) -> list[tuple[tuple[str, ...], str]]:
    """(path, Delta type name) of every leaf column in schema order; a struct's fields are leaves of their own,
    an array or a map is one leaf (its type name 'array' / 'map')."""
    out: list[tuple[tuple[str, ...], str]] = []

    def walk(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> None:
        for f in fields:
            kind = f["type"]
            path = (*prefix, f["name"])
            if isinstance(kind, dict) and kind.get("type") == "struct":
                walk(kind["fields"], path)
            else:
                out.append((path, kind if isinstance(kind, str) else kind["type"]))

    walk(json.loads(schema_json)["fields"], ())
    return out


def stats_columns(schema_json: str, configuration: Mapping[str, str | None]) -> tuple[tuple[str, ...], ...]:
    """The leaf columns Delta collects statistics on for a table with this schema and configuration."""
    leaves = [path for path, _ in leaf_columns(schema_json)]
    named = configuration.get("delta.dataSkippingStatsColumns")
    if named:
        wanted = [tuple(p.strip().strip("`") for p in name.split(".")) for name in named.split(",") if name.strip()]
        return tuple(p for p in leaves if any(p[:len(w)] == w for w in wanted))
    count = int(configuration.get("delta.dataSkippingNumIndexedCols") or 32)
    return tuple(leaves if count < 0 else leaves[:count])


class Stats:
    """Delta statistics of one file, merged batch by batch."""

    def __init__(self, schema_json: str, columns: Iterable[tuple[str, ...]], tight_bounds: bool) -> None:
        kinds = dict(leaf_columns(schema_json))
        self.columns = [(p, kinds[p]) for p in columns if p in kinds]
        self.tight_bounds = tight_bounds
        self.records = 0
        self.nulls: dict[tuple[str, ...], int] = {p: 0 for p, _ in self.columns}
        self.low: dict[tuple[str, ...], Any] = {}
        self.high: dict[tuple[str, ...], Any] = {}
        self.unbounded: set[tuple[str, ...]] = set()  # a value made a bound unknowable (NaN, a long string)

    def add(self, batch: pa.RecordBatch) -> None:
        self.records += batch.num_rows
        for path, kind in self.columns:
            column = _column(batch, path)
            self.nulls[path] += column.null_count
            if kind in _BOUNDED and column.null_count < len(column):
                self._bound(path, kind, column)

    def _bound(self, path: tuple[str, ...], kind: str, column: pa.Array) -> None:
        if kind in ("float", "double") and pc.any(pc.is_nan(column)).as_py():
            self.unbounded.add(path)
            return
        found = pc.min_max(column)
        low, high = found["min"].as_py(), found["max"].as_py()
        if low is None:
            return
        if path not in self.low or low < self.low[path]:
            self.low[path] = low
        if path not in self.high or high > self.high[path]:
            self.high[path] = high

    def to_json(self) -> str:
        low: dict[str, Any] = {}
        high: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for path, kind in self.columns:
            _put(nulls, path, self.nulls[path])
            if path in self.unbounded or path not in self.low:
                continue
            bounds = _json_bounds(kind, self.low[path], self.high[path])
            if bounds[0] is not None:
                _put(low, path, bounds[0])
            if bounds[1] is not None:
                _put(high, path, bounds[1])
        out: dict[str, Any] = {"numRecords": self.records, "minValues": low, "maxValues": high, "nullCount": nulls}
        if self.tight_bounds:
            out["tightBounds"] = True
        return json.dumps(out, separators=(",", ":"))


def _column(batch: pa.RecordBatch, path: tuple[str, ...]) -> pa.Array:
    column = batch.column(path[0])
    for name in path[1:]:
        # flatten() gives a struct's children with the struct's own nulls merged in: a field of a null
        # struct counts as null, as Delta counts it.
        struct_type = column.type
        column = column.flatten()[struct_type.get_field_index(name)]
    return column


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = value


def _json_bounds(kind: str, low: Any, high: Any) -> tuple[Any, Any]:
    if kind == "string":
        # Delta keeps a prefix: the prefix bounds from below; no short string bounds a longer one from above.
        return low[:STRING_PREFIX], (high if len(high) <= STRING_PREFIX else None)
    if kind in ("float", "double"):
        return (low if math.isfinite(low) else None), (high if math.isfinite(high) else None)
    if kind in ("timestamp", "timestamp_ntz"):
        return _timestamp(low, kind, up=False), _timestamp(high, kind, up=True)
    if kind == "date":
        return low.isoformat(), high.isoformat()
    return low, high


def _timestamp(value: dt.datetime, kind: str, up: bool) -> str:
    # Delta stores milliseconds: a maximum rounds up so that it still bounds the microseconds.
    if up and value.microsecond % 1000:
        value = value + dt.timedelta(microseconds=1000 - value.microsecond % 1000)
    text = value.replace(tzinfo=None).isoformat(timespec="milliseconds")
    return text + "Z" if kind == "timestamp" else text


class FileWriter:
    """Parquet files of one task under the table's root: a new file once one reaches the target size."""

    def __init__(self, spec: FileSpec, prefix: str = "part") -> None:
        self.spec = spec
        self.schema = spec.arrow_schema()
        self.fs, self.base = _filesystem(spec)
        self.prefix = prefix
        self.done: list[dict[str, Any]] = []
        self._writer: pq.ParquetWriter | None = None
        self._sink: Any = None
        self._path = ""
        self._stats: Stats | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Add `batch` (the table's columns, by name) to the current file."""
        if batch.num_rows == 0:
            return
        batch = batch.select(self.schema.names).cast(self.schema)
        if self._writer is None:
            self._open()
        assert self._stats is not None
        self._stats.add(batch)
        self._pending.append(batch)
        self._pending_bytes += batch.nbytes
        if self._pending_bytes >= ROW_GROUP_BYTES:
            self._flush()
            if self._sink.tell() >= self.spec.target_file_bytes:
                self._close()

    def finish(self) -> list[dict[str, Any]]:
        """Close the current file; every file written, as the rows the task yields."""
        if self._writer is not None:
            self._close()
        return self.done

    def discard(self) -> None:
        """Delete every file written (a batch that cannot commit leaves less behind)."""
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None
            self.done.append({"path": self._path})
        for row in self.done:
            self.fs.delete_file(f"{self.base}{row['path']}")
        self.done = []

    def _open(self) -> None:
        self._path = f"{self.prefix}-{uuid.uuid4()}-c000.snappy.parquet"
        self._sink = self.fs.open_output_stream(f"{self.base}{self._path}")
        self._writer = pq.ParquetWriter(self._sink, self.schema, compression="snappy")
        self._stats = Stats(self.spec.schema_json, self.spec.stats_columns, self.spec.tight_bounds)

    def _flush(self) -> None:
        if self._pending:
            assert self._writer is not None
            self._writer.write_table(pa.Table.from_batches(self._pending, self.schema),
                                     row_group_size=sum(b.num_rows for b in self._pending))
            self._pending, self._pending_bytes = [], 0

    def _close(self) -> None:
        self._flush()
        assert self._writer is not None and self._stats is not None
        self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        self._writer = None
        self.done.append({"path": self._path, "size": size, "records": self._stats.records,
                          "modificationTime": int(time.time() * 1000), "stats": self._stats.to_json(),
                          "badRecords": None, "firstBad": None})


def _filesystem(spec: FileSpec) -> tuple[Any, str]:
    """A pyarrow file system for the table's files and the prefix of their names on it."""
    from pyarrow import fs

    from kafka_spark.delta.table_state import local_path

    local = local_path(spec.root)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        return fs.LocalFileSystem(), f"{local}/"
    # Object stores through delta-rs's own store client: the same URI and options as the commit.
    from deltalake.fs import DeltaStorageHandler

    return fs.PyFileSystem(DeltaStorageHandler(spec.root, dict(spec.storage_options) or None)), ""


def write_files(batches: Iterable[pa.RecordBatch], spec: FileSpec, prefix: str = "part") -> Iterator[pa.RecordBatch]:
    """Write `batches` as the table's files; yield the file rows (FILE_ROWS_SCHEMA), or one row about the
    bad records when some do not decode (after deleting the files)."""
    writer = FileWriter(spec, prefix)
    bad = 0
    first: dict[str, Any] | None = None
    for batch in batches:
        errors = [batch.column(c) for c in ERROR_COLUMNS if c in batch.schema.names]
        failed = _failed(errors) if errors else None
        if failed is not None and pc.any(failed).as_py():
            if first is None:
                at = pc.index(failed, True).as_py()
                first = {"topic": batch.column("topic")[at].as_py(), "partition": batch.column("partition")[at].as_py(),
                         "offset": batch.column("offset")[at].as_py(),
                         "reason": next(e[at].as_py() for e in errors if e[at].is_valid)}
                writer.discard()
            bad += pc.sum(failed).as_py()
        if first is None:
            writer.write(batch)
    if first is not None:
        writer.discard()
        yield pa.RecordBatch.from_pylist([{"path": None, "size": None, "records": None, "modificationTime": None,
                                           "stats": None, "badRecords": bad, "firstBad": json.dumps(first)}],
                                         schema=FILE_ROWS_SCHEMA)
        return
    rows = writer.finish()
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=FILE_ROWS_SCHEMA)


def _failed(errors: list[pa.Array]) -> pa.Array:
    failed = pc.is_valid(errors[0])
    for other in errors[1:]:
        failed = pc.or_(failed, pc.is_valid(other))
    return failed


def write_range(batches: Iterable[pa.RecordBatch], r: Any, spec: str, secret: str | None) -> Iterator[pa.RecordBatch]:
    """The `directWriteTo` writer: one task's range (`r`, an OffsetRange) written as the table's files."""
    yield from write_files(batches, FileSpec.from_json(spec, secret), prefix=f"part-{r.partition:05d}")

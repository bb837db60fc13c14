"""The direct writer's task side: one offset range fetched (and decoded) into Parquet files under the table's root.

A task of a `pykafka` read given the internal option `directWriteTo` (see `spark/datasource.py`) writes its
range here instead of yielding records, and yields one small row per file it wrote (`FILE_ROWS_DDL`): the
path relative to the table root, its size, record count, modification time, column statistics and a sketch
of its records' Kafka timestamps (the commit's freshness: sink/freshness.py). The
driver commits those files (the table format's direct writer: delta/direct_commit.py); a file no commit
references is harmless (VACUUM removes it), as with Spark's writer.

A partitioned table's rows go to Hive-style directories (`col=value/`, `partition_path`) as Spark's writer
names them, without the partition columns (their values are the file's `partitionValues`, in the text form
Delta on Spark records, `partition_value`). A task keeps at most `MAX_OPEN_FILES` files open and
`ROW_GROUP_BYTES` of rows in memory across them, whatever the number of partition values.

Statistics are those Delta on Spark writes for data skipping: `numRecords`, then `minValues`, `maxValues`
and `nullCount` of the first `delta.dataSkippingNumIndexedCols` leaf columns that are not partition columns
(or of `delta.dataSkippingStatsColumns`), min/max only for numbers, dates, timestamps and strings. Bounds are
only ever wider than the data, never narrower: a string longer than the prefix Delta keeps (32 UTF-16 units)
gets that prefix as minimum and, as maximum, the prefix with Delta's tie-breaker character (`truncated_max`),
a timestamp's maximum is rounded up to the millisecond Delta stores,
NaN-holding floats get no bounds, decimals are written as JSON numbers with their own digits. A reader treats
a missing bound as unknown.

A record that does not decode (a decoding read keeps the reason in `keyError`/`valueError`) fails the
batch: the task deletes the files it wrote, counts the bad records and yields one row naming the first.

With `value_schema` the task parses each value into the column `data` as Spark's `from_json` would
(formats/spark_json/parser.py). A value it cannot be sure of stops the task: it deletes its files and yields one
row naming the value with `"spark": true`, and the driver writes the batch through Spark's writer instead.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_spark.formats.spark_json.parser import NotCertain, SparkJson
from kafka_spark.sink.parquet.file_pool import FilePool, PooledFile
from kafka_spark.sink.parquet.partition_values import (
    partition_path,
    partition_value,
    time_zone,
)
from kafka_spark.sink.parquet.stats import Stats, leaf_columns

# The rows a direct-writing task yields: one per file; a row with `firstBad` reports bad records instead.
# `path` is relative to the table root, as the file is named on the store (delta-rs encodes it for the log);
# `partitionValues` is the JSON object of the add action's partition values.
FILE_ROWS_DDL = ("path string, size long, records long, modificationTime long, stats string, "
                 "partitionValues string, badRecords long, firstBad string, timestamps string")
FILE_ROWS_SCHEMA = pa.schema([
    pa.field("path", pa.string()), pa.field("size", pa.int64()), pa.field("records", pa.int64()),
    pa.field("modificationTime", pa.int64()), pa.field("stats", pa.string()),
    pa.field("partitionValues", pa.string()), pa.field("badRecords", pa.int64()), pa.field("firstBad", pa.string()),
    pa.field("timestamps", pa.string()),
])
ERROR_COLUMNS = ("keyError", "valueError")

# One row group per this much Arrow data: fetches come in small batches, and a row group per batch would
# make files slow to read.
ROW_GROUP_BYTES = 64 << 20
# Spark's `spark.sql.parquet.compression.codec` values the direct writer writes -> (pyarrow's codec, the file
# name's codec part as Spark's Parquet writer names it). Spark's lz4 (Hadoop's framing), lzo and brotli
# are left to Spark's writer.
PARQUET_CODECS = {"snappy": ("snappy", ".snappy"), "zstd": ("zstd", ".zstd"), "gzip": ("gzip", ".gz"),
                  "none": ("none", ""), "uncompressed": ("none", "")}
TARGET_FILE_BYTES = 128 << 20
# Files open at once in a task: rows of one more partition value close the least recently written file.
MAX_OPEN_FILES = 32


@dataclass(frozen=True)
class FileSpec:
    """What a task needs to write a table's files: the root, the table's Delta schema (JSON), the leaf columns
    that get statistics (paths of field names), whether Delta expects `tightBounds`, the partition columns and
    the session time zone that names a timestamp partition's directory."""

    root: str
    schema_json: str
    stats_columns: tuple[tuple[str, ...], ...]
    tight_bounds: bool = False
    target_file_bytes: int = TARGET_FILE_BYTES
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    partition_columns: tuple[str, ...] = ()
    time_zone: str = "UTC"
    compression: str = "snappy"  # a PARQUET_CODECS key
    value_schema: str | None = None  # the struct `data` is parsed into (Spark's JSON form), if any

    def to_json(self) -> str:
        """The spec without the storage options (they travel in their own, redacted, option)."""
        return json.dumps({"root": self.root, "schema": self.schema_json,
                           "stats": [list(p) for p in self.stats_columns], "tight": self.tight_bounds,
                           "target": self.target_file_bytes, "partitions": list(self.partition_columns),
                           "zone": self.time_zone, "compression": self.compression, "parse": self.value_schema})

    @classmethod
    def from_json(cls, text: str, storage: str | None = None) -> FileSpec:
        raw = json.loads(text)
        return cls(raw["root"], raw["schema"], tuple(tuple(p) for p in raw["stats"]), bool(raw["tight"]),
                   int(raw["target"]), json.loads(storage) if storage else {}, tuple(raw.get("partitions") or ()),
                   str(raw.get("zone") or "UTC"), str(raw.get("compression") or "snappy"), raw.get("parse"))

    def arrow_schema(self) -> pa.Schema:
        """The table's columns, partition columns included."""
        from deltalake import Schema

        return pa.schema(Schema.from_json(self.schema_json).to_arrow())

    @property
    def takes_views(self) -> bool:
        """Whether the tasks should hand the writer keys and values as binary_view arrays into the bytes they
        read (`decode_to_arrow`'s `views`): the Parquet files then get them without a copy. Not when the values
        are parsed, nor into partitioned files (a file's pending rows would keep every buffer they came from)."""
        return self.value_schema is None and not self.partition_columns and parquet_takes_views()


@functools.cache
def parquet_takes_views() -> bool:
    """Whether this pyarrow writes binary_view columns to Parquet."""
    try:
        table = pa.table({"v": pa.array([b"x" * 20], pa.binary()).cast(pa.binary_view())})
        pq.write_table(table, pa.BufferOutputStream(), store_schema=False)
    except (AttributeError, NotImplementedError, pa.ArrowException):
        return False
    return True


class _File(PooledFile):
    """One open Parquet file of a FileWriter, in the directory of its partition values."""

    def __init__(self, directory: str, path: str, sink: Any, writer: pq.ParquetWriter, stats: Stats,
                 values: dict[str, str | None]) -> None:
        super().__init__(directory, path, sink, writer)
        self.stats, self.values = stats, values


class FileWriter(FilePool[_File]):
    """Parquet files of one task under the table's root, in the directory of their partition values: a new
    file once one reaches the target size."""

    def __init__(self, spec: FileSpec, prefix: str = "part") -> None:
        super().__init__(spec.target_file_bytes, ROW_GROUP_BYTES, MAX_OPEN_FILES)
        self.spec = spec
        self.table_schema = spec.arrow_schema()
        self.partitions = spec.partition_columns
        kinds = dict(leaf_columns(spec.schema_json))
        self.kinds = [kinds[(c,)] for c in self.partitions]
        zone = time_zone(spec.time_zone)
        if zone is None and "timestamp" in self.kinds:
            raise ValueError(f"session time zone {spec.time_zone!r} is unknown")
        self.zone = zone or dt.timezone.utc
        self.views = spec.takes_views
        # What a batch is cast to: the table's types, binary columns as views when the tasks hand views over.
        self.target = _binary_as_views(self.table_schema) if self.views else self.table_schema
        # Spark's writer leaves the partition columns out of the files: their values are in the log.
        self.schema = pa.schema([f for f in self.target if f.name not in self.partitions])
        self.fs, self.base = _filesystem(spec)
        self.local = self.fs.type_name == "local"
        self.prefix = prefix

    def write(self, batch: pa.RecordBatch) -> None:
        """Add `batch` (the table's columns, by name) to the files of its partition values."""
        if batch.num_rows == 0:
            return
        batch = batch.select(self.target.names)
        if not batch.schema.equals(self.target):
            batch = batch.cast(self.target)
        for directory, values, rows in self._split(batch):
            file = self._file(directory, functools.partial(self._new, directory, values))
            data = rows.select(self.schema.names)
            file.stats.add(data)
            self._add(file, data, rows)
        self._roll()

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[str, dict[str, str | None], pa.RecordBatch]]:
        """The batch's rows by partition directory, with the directory's `partitionValues`."""
        if not self.partitions:
            yield "", {}, batch
            return
        # Each row as its columns' dictionary indices (-1: null): Python sees each distinct combination once,
        # never each row.
        encoded = [pc.dictionary_encode(batch.column(name)) for name in self.partitions]
        indices = np.stack([e.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
                            for e in encoded], axis=1)
        combinations, group_of_row = np.unique(indices, axis=0, return_inverse=True)
        group_of_row = group_of_row.reshape(-1)
        groups: dict[str, tuple[dict[str, str | None], list[int]]] = {}
        for group, combination in enumerate(combinations.tolist()):
            texts, values = [], {}
            for name, kind, column, index in zip(self.partitions, self.kinds, encoded, combination, strict=True):
                text, values[name] = partition_value(kind, None if index < 0 else column.dictionary[index].as_py(),
                                                     self.zone)
                texts.append((name, text))
            # Texts Spark makes null (an empty string) share the null's directory.
            groups.setdefault(partition_path(texts), (values, []))[1].append(group)
        if len(groups) == 1:
            directory, (values, _) = next(iter(groups.items()))
            yield directory, values, batch
            return
        for directory, (values, members) in groups.items():
            yield directory, values, batch.filter(pa.array(np.isin(group_of_row, members)))

    def _new(self, directory: str, values: dict[str, str | None]) -> _File:
        codec, suffix = PARQUET_CODECS[self.spec.compression]
        path = f"{directory}{self.prefix}-{uuid.uuid4()}-c000{suffix}.parquet"
        if self.local and directory:
            self.fs.create_dir(f"{self.base}{directory}", recursive=True)
        sink = self.fs.open_output_stream(f"{self.base}{path}")
        # With views the file's Arrow schema would say binary_view where the table says binary: the files carry
        # none then (as Spark's do not), and readers take the types from Parquet's own.
        writer = pq.ParquetWriter(sink, self.schema, compression=codec, store_schema=not self.views)
        stats = Stats(self.spec.schema_json, self.spec.stats_columns, self.spec.tight_bounds)
        return _File(directory, path, sink, writer, stats, values)

    def _write_row_group(self, file: _File) -> None:
        file.writer.write_table(pa.Table.from_batches(file.pending, self.schema),
                                row_group_size=sum(b.num_rows for b in file.pending))

    def _row(self, file: _File, size: int) -> dict[str, Any]:
        return {"path": file.path, "size": size, "records": file.stats.records,
                "modificationTime": int(time.time() * 1000), "stats": file.stats.to_json(),
                "partitionValues": json.dumps(file.values, separators=(",", ":")),
                "badRecords": None, "firstBad": None, "timestamps": file.timestamps_json()}

    def _delete(self, path: str) -> None:
        self.fs.delete_file(f"{self.base}{path}")


def _binary_as_views(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(pa.binary_view()) if f.type == pa.binary() else f for f in schema])


def _filesystem(spec: FileSpec) -> tuple[Any, str]:
    """A pyarrow file system for the table's files and the prefix of their names on it."""
    from pyarrow import fs

    from kafka_spark.sink.table_files import local_path

    local = local_path(spec.root)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        return fs.LocalFileSystem(), f"{local}/"
    # Object stores through delta-rs's own store client: the same URI and options as the commit.
    from deltalake.fs import DeltaStorageHandler

    return fs.PyFileSystem(DeltaStorageHandler(spec.root, dict(spec.storage_options) or None)), ""


def write_files(batches: Iterable[pa.RecordBatch], spec: FileSpec, prefix: str = "part") -> Iterator[pa.RecordBatch]:
    """Write `batches` as the table's files; yield the file rows (FILE_ROWS_SCHEMA), or one row about the
    bad records when some do not decode (after deleting the files), or about the first value the JSON parse
    leaves to Spark."""
    writer = FileWriter(spec, prefix)
    parser = SparkJson(spec.value_schema) if spec.value_schema else None
    bad = 0
    first: dict[str, Any] | None = None
    for batch in batches:
        errors = [batch.column(c) for c in ERROR_COLUMNS if c in batch.schema.names]
        failed = _failed(errors) if errors else None
        if failed is not None and pc.any(failed).as_py():
            if first is None:
                at = pc.index(failed, True).as_py()
                first = {**_where(batch, at), "reason": next(e[at].as_py() for e in errors if e[at].is_valid)}
                writer.discard()
            bad += pc.sum(failed).as_py()
        if first is not None:
            continue
        if parser is not None:
            try:
                batch = batch.append_column("data", parser.parse(batch.column("value")))
            except NotCertain as exc:
                first, bad = {**_where(batch, exc.row or 0), "reason": exc.reason, "spark": True}, 1
                break
        writer.write(batch)
    if first is not None:
        writer.discard()
        yield pa.RecordBatch.from_pylist([{"path": None, "size": None, "records": None, "modificationTime": None,
                                           "stats": None, "partitionValues": None, "badRecords": bad,
                                           "firstBad": json.dumps(first), "timestamps": None}],
                                         schema=FILE_ROWS_SCHEMA)
        return
    rows = writer.finish()
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=FILE_ROWS_SCHEMA)


def _where(batch: pa.RecordBatch, at: int) -> dict[str, Any]:
    return {name: batch.column(name)[at].as_py() for name in ("topic", "partition", "offset")}


def delete_files(spec: FileSpec, paths: Iterable[str]) -> None:
    """Delete files a task wrote that no commit will reference (paths relative to the table root)."""
    filesystem, base = _filesystem(spec)
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(f"{base}{path}")


def _failed(errors: list[pa.Array]) -> pa.Array:
    failed = pc.is_valid(errors[0])
    for other in errors[1:]:
        failed = pc.or_(failed, pc.is_valid(other))
    return failed


def write_range(batches: Iterable[pa.RecordBatch], r: Any, spec: str, secret: str | None) -> Iterator[pa.RecordBatch]:
    """The `directWriteTo` writer: one task's range (`r`, an OffsetRange) written as the table's files."""
    yield from write_files(batches, FileSpec.from_json(spec, secret), prefix=f"part-{r.partition:05d}")

"""The Iceberg direct writer's task side: each task of a batch's Kafka read writes its range as data files.

The `pykafka` read is given the internal `directWriteTo` option (spark/source/direct_write.py), as the Delta
direct writer's is: each task writes the records of its range as Parquet files where pyiceberg's own writer puts
them (the table's location provider: `<table location>/data/<field>=<value>/...` for the default one, the
directories of Iceberg's partition paths), each column, nested ones too, carrying its Iceberg field id
(`PARQUET:field_id`) from the table's current schema, converted as pyiceberg converts Arrow rows for its own
writes (`_to_requested_schema`). A table with a sort order has each file's rows in that order: a file is then
the rows a task holds when its row group is due (up to a row group's worth), sorted and written at once, since
a file whose later row groups started over would not be in order. It yields one small row per file
(`FILE_ROWS_DDL`): the path, size, record count, partition values and the file's Parquet footer, from which the
driver builds the `DataFile`s with pyiceberg's statistics (`data_files`; a sorted file names its order). A file
no snapshot references is an orphan (Iceberg's orphan-file removal deletes it); a task that fails deletes the
files it wrote.
"""

from __future__ import annotations

import contextlib
import functools
import json
import pickle
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_spark.iceberg.sort_orders import sorted_rows
from kafka_spark.sink.parquet.file_pool import FilePool, PooledFile
from kafka_spark.sink.parquet.files import MAX_OPEN_FILES, ROW_GROUP_BYTES

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.partitioning import PartitionKey, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.sorting import SortOrder

# One row per file a task wrote: `partition` (the partition record's values) and `footer` (the Parquet
# FileMetaData) are pickled, for the driver of the same environment.
FILE_ROWS_DDL = "path string, size long, records long, partition binary, footer binary, timestamps string"
FILE_ROWS_SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("size", pa.int64()),
                              pa.field("records", pa.int64()), pa.field("partition", pa.binary()),
                              pa.field("footer", pa.binary()), pa.field("timestamps", pa.string())])


@dataclass(frozen=True)
class DataFileSpec:
    """What a task needs to write a table's data files: the table's location and properties, its current schema,
    partition spec (pyiceberg's JSON) and their ids, the rows' schema with the table's field ids, the FileIO's
    properties (they may hold credentials: never shown) and the table's sort order (pyiceberg's JSON; None:
    unsorted)."""

    location: str
    properties: Mapping[str, str]
    schema_json: str
    spec_json: str
    spec_id: int
    rows_schema_json: str
    io_properties: Mapping[str, str] = field(default_factory=dict, repr=False)
    sort_order_json: str | None = None

    def to_json(self) -> str:
        """The spec without the FileIO's properties (they travel in the read's secret option)."""
        return json.dumps({"location": self.location, "properties": dict(self.properties), "schema": self.schema_json,
                           "spec": self.spec_json, "spec_id": self.spec_id, "rows": self.rows_schema_json,
                           "sort_order": self.sort_order_json})

    @classmethod
    def from_json(cls, text: str, secret: str | None = None) -> DataFileSpec:
        raw = json.loads(text)
        return cls(raw["location"], raw["properties"], raw["schema"], raw["spec"], int(raw["spec_id"]), raw["rows"],
                   json.loads(secret) if secret else {}, raw.get("sort_order"))

    def schema(self) -> Schema:
        from pyiceberg.schema import Schema

        return Schema.model_validate_json(self.schema_json)

    def spec(self) -> PartitionSpec:
        from pyiceberg.partitioning import PartitionSpec

        return PartitionSpec.model_validate_json(self.spec_json)

    def sort_order(self) -> SortOrder | None:
        """The order of the files' rows, None when the table is unsorted."""
        from pyiceberg.table.sorting import SortOrder

        if self.sort_order_json is None:
            return None
        order = SortOrder.model_validate_json(self.sort_order_json)
        return None if order.is_unsorted else order


def file_spec(table: Table, rows: pa.Schema) -> DataFileSpec:
    """The spec of `table`'s data files for rows of Arrow schema `rows` (timestamps in UTC); ValueError when
    the rows do not fit the table's schema (as pyiceberg's own append refuses them)."""
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible, pyarrow_to_schema

    metadata = table.metadata
    schema = metadata.schema()
    _check_pyarrow_schema_compatible(schema, rows, format_version=metadata.format_version)
    rows_schema = pyarrow_to_schema(rows, name_mapping=schema.name_mapping, format_version=metadata.format_version)
    order = metadata.sort_order_by_id(metadata.default_sort_order_id)
    return DataFileSpec(metadata.location, dict(metadata.properties), schema.model_dump_json(),
                        metadata.spec().model_dump_json(), metadata.default_spec_id, rows_schema.model_dump_json(),
                        # the FileIO's settings; a REST catalog's client adds objects of its own (`auth.manager`),
                        # which the tasks neither need nor could be sent
                        {k: v for k, v in table.io.properties.items() if isinstance(v, str)},
                        order.model_dump_json() if order is not None and not order.is_unsorted else None)


def file_schema(schema: Schema) -> Schema:
    """The schema the files are written with: the table's, names sanitized as pyiceberg's writer does."""
    from pyiceberg.schema import sanitize_column_names

    sanitized = sanitize_column_names(schema)
    return sanitized if sanitized != schema else schema


class _File(PooledFile):
    """One open data file, under its partition path, with its partition record's values."""

    def __init__(self, name: str, path: str, sink: Any, writer: Any, partition: tuple[Any, ...]) -> None:
        super().__init__(name, path, sink, writer)
        self.partition = partition
        self.records = 0


class DataFileWriter(FilePool[_File]):
    """The Parquet data files of one task, one open file per partition, a new one at the table's target size."""

    def __init__(self, spec: DataFileSpec, prefix: str) -> None:
        from pyiceberg.io import load_file_io
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.io.pyarrow import _get_parquet_writer_kwargs
        from pyiceberg.manifest import FileFormat
        from pyiceberg.schema import Schema
        from pyiceberg.table import TableProperties
        from pyiceberg.table.locations import load_location_provider
        from pyiceberg.utils.properties import property_as_int

        props = dict(spec.properties)
        target = property_as_int(props, TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
                                 TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT) or 512 << 20
        super().__init__(target, ROW_GROUP_BYTES, MAX_OPEN_FILES)
        self.table_schema, self.partition_spec = spec.schema(), spec.spec()
        self.file_schema = file_schema(self.table_schema)
        self.rows_schema = Schema.model_validate_json(spec.rows_schema_json)
        self.io = load_file_io(dict(spec.io_properties), spec.location)
        self.locations = load_location_provider(spec.location, props)
        self.format_model = FileFormatFactory.get(FileFormat.PARQUET)
        self.kwargs = _get_parquet_writer_kwargs(props)
        self.row_limit = property_as_int(props, TableProperties.PARQUET_ROW_GROUP_LIMIT,
                                         TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT) or 1 << 20
        self.prefix = prefix
        self._count = 0
        self.sort_order = spec.sort_order()
        if self.sort_order is not None:
            self.target_file_bytes = 0  # a sorted file is one sorted run: closed once its rows are written

    def write(self, batch: pa.RecordBatch) -> None:
        """Add `batch` (the rows, by the table's column names) to the files of its partitions."""
        from pyiceberg.io.pyarrow import _to_requested_schema

        if batch.num_rows == 0:
            return
        batch = in_utc_batch(batch)
        for key, rows in self._split(batch):
            data = _to_requested_schema(self.file_schema, self.rows_schema, rows, include_field_ids=True,
                                        format_model=self.format_model)
            name = key.to_path() if key is not None else ""
            file = self._file(name, functools.partial(self._new, name, key, data.schema))
            self._add(file, data, rows)
            file.records += data.num_rows
        self._roll()

    def _split(self, batch: pa.RecordBatch) -> Iterator[tuple[PartitionKey | None, pa.RecordBatch]]:
        """The batch's rows by partition, each with its key (None: an unpartitioned table)."""
        from pyiceberg.io.pyarrow import _determine_partitions

        if self.partition_spec.is_unpartitioned():
            yield None, batch
            return
        for part in _determine_partitions(self.partition_spec, self.table_schema, pa.Table.from_batches([batch])):
            for chunk in part.arrow_table_partition.to_batches():
                yield part.partition_key, chunk

    def _new(self, directory: str, key: PartitionKey | None, schema: pa.Schema) -> _File:
        import pyarrow.parquet as pq

        self._count += 1
        # As Iceberg's Spark writer names its files: task, attempt and a write id, then the file's number.
        name = f"{self.prefix}-{uuid.uuid4()}-{self._count:05d}.parquet"
        path = self.locations.new_data_location(name, key)
        sink = self.io.new_output(path).create(overwrite=False)
        writer = pq.ParquetWriter(sink, schema=schema, store_decimal_as_integer=True, **self.kwargs)
        values = tuple(key.partition[i] for i in range(len(key.partition))) if key is not None else ()
        return _File(directory, path, sink, writer, values)

    def _write_row_group(self, file: _File) -> None:
        table = sorted_rows(pa.Table.from_batches(file.pending), self.sort_order, self.file_schema)
        if not table.schema.equals(file.writer.schema, check_metadata=True):
            table = table.cast(file.writer.schema)  # a later batch's string columns as large ones, or back
        file.writer.write_table(table, row_group_size=min(self.row_limit, max(1, table.num_rows)))

    def _row(self, file: _File, size: int) -> dict[str, Any]:
        return {"path": file.path, "size": size, "records": file.records, "partition": pickle.dumps(file.partition),
                "footer": pickle.dumps(file.writer.writer.metadata), "timestamps": file.timestamps_json()}

    def _delete(self, path: str) -> None:
        with contextlib.suppress(OSError):  # FileNotFoundError too: a file never created
            self.io.delete(path)


def in_utc_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with its timestamps, nested ones too, labelled UTC (Spark's Arrow labels them with the session's
    zone, which Iceberg's `timestamptz` does not take; the instants stay the same)."""
    schema = pa.schema([f.with_type(_utc(f.type)) for f in batch.schema], metadata=batch.schema.metadata)
    return batch.cast(schema) if not schema.equals(batch.schema) else batch


def _utc(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(kind):
        return pa.timestamp(kind.unit, "UTC") if kind.tz not in (None, "UTC") else kind
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_utc(f.type)) for f in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = kind.value_field.with_type(_utc(kind.value_type))
        return pa.list_(item) if pa.types.is_list(kind) else pa.large_list(item)
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field.with_type(_utc(kind.key_type)), kind.item_field.with_type(_utc(kind.item_type)))
    return kind


def write_data_files(batches: Iterable[pa.RecordBatch], spec: DataFileSpec, prefix: str = "00000-0"
                     ) -> Iterator[pa.RecordBatch]:
    """Write `batches` as the table's data files; the file rows (FILE_ROWS_SCHEMA). A failure deletes the files
    written so far and is raised."""
    writer = DataFileWriter(spec, prefix)
    try:
        for batch in batches:
            writer.write(batch)
        rows = writer.finish()
    except BaseException:
        writer.discard()
        raise
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=FILE_ROWS_SCHEMA)


def write_range(batches: Iterable[pa.RecordBatch], r: Any, spec: str, secret: str | None
                ) -> Iterator[pa.RecordBatch]:
    """The `directWriteTo` writer (spark/source/direct_write.py): one task's range (`r`, an OffsetRange) of
    records written as the table's data files, named after its topic-partition and the task's attempt."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    yield from write_data_files(batches, DataFileSpec.from_json(spec, secret), f"{r.partition:05d}-{attempt}")


def data_files(rows: Iterable[Mapping[str, Any]], spec: DataFileSpec) -> list[DataFile]:
    """The `DataFile`s of the files the tasks wrote (`rows`: their file rows), statistics from their footers as
    pyiceberg computes them for its own writes."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    schema = file_schema(spec.schema())
    plan = compute_statistics_plan(schema, dict(spec.properties))
    mapping = parquet_path_to_id_mapping(schema)
    order = spec.sort_order()
    files = []
    for row in rows:
        statistics = data_file_statistics_from_parquet_metadata(pickle.loads(row["footer"]), plan, mapping)
        files.append(DataFile.from_args(
            content=DataFileContent.DATA, file_path=row["path"], file_format=FileFormat.PARQUET,
            partition=Record(*pickle.loads(row["partition"])), file_size_in_bytes=row["size"],
            sort_order_id=order.order_id if order is not None else None,
            spec_id=spec.spec_id, equality_ids=None, key_metadata=None, **statistics.to_serialized_dict()))
    return files

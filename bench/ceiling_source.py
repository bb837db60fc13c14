"""The fastest any Python data source can hand Spark the rows of a Kafka read: a source that yields
ready-made Arrow batches of Spark's Kafka schema (null keys, values of one size) and does no other
work. Timed beside the real readers, it shows how much of their time is Spark's Python bridge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)

from kafka_spark.spark.schema import kafka_ddl

NAME = "arrow-ceiling"


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.partitions_ = int(options["partitions"])
        self.rows = int(options["rows"])
        self.size = int(options["size"])
        self.batch_rows = int(options.get("batchRows", "25000"))

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(p) for p in range(self.partitions_)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        share = self.rows // self.partitions_ + (1 if partition.value < self.rows % self.partitions_ else 0)
        n = min(self.batch_rows, share)
        value = b"x" * self.size
        batch = pa.RecordBatch.from_arrays([
            pa.nulls(n, pa.binary()), pa.array([value] * n, pa.binary()), pa.array(["topic"] * n, pa.string()),
            pa.array([partition.value] * n, pa.int32()), pa.array(range(n), pa.int64()),
            pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
        ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"])
        done = 0
        while done < share:
            take = min(n, share - done)
            yield batch if take == n else batch.slice(0, take)
            done += take


class ArrowCeiling(DataSource):
    """Options: partitions, rows, size (value bytes), batchRows."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return kafka_ddl(False)

    def reader(self, schema: object) -> DataSourceReader:
        return _Reader(dict(self.options))


PARQUET_NAME = "parquet-ceiling"


class _ParquetReader(_Reader):
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.root = options["root"]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_spark.delta.writer_choice import rows_schema
        from kafka_spark.sink.options import KafkaSource
        from kafka_spark.sink.parquet.files import FileSpec, write_files
        from kafka_spark.sink.parquet.stats import stats_columns

        schema = rows_schema(KafkaSource({}))
        spec = FileSpec(self.root, schema, stats_columns(schema, {}))
        yield from write_files(super().read(partition), spec, prefix=f"part-{partition.value:05d}")


class ParquetCeiling(DataSource):
    """The direct writer's Parquet files alone: the `arrow-ceiling` rows written as a table's files by the
    writer the sink's tasks run (no Kafka read, no commit); yields the file rows. Options: as arrow-ceiling's,
    plus root (the directory the files go to)."""

    @classmethod
    def name(cls) -> str:
        return PARQUET_NAME

    def schema(self) -> str:
        from kafka_spark.sink.parquet.files import FILE_ROWS_DDL

        return FILE_ROWS_DDL

    def reader(self, schema: object) -> DataSourceReader:
        return _ParquetReader(dict(self.options))


IPC_NAME = "ipc-ceiling"


class _IpcReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.files = options["files"].split(",")

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        with pa.memory_map(partition.value) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)


def payload_plan(options: dict[str, str], topic: str) -> Any:
    """The decoding plan `format("pykafka")` makes of its decoding `options` (valueFormat, schema.registry.url,
    valueMessageName, validate, ...) for `topic`, as `decode_batch` takes it."""
    from kafka_spark.formats.options import payload_options
    from kafka_spark.formats.plan import plan_payloads

    payloads = payload_options(options)
    assert payloads is not None
    return plan_payloads(payloads, (topic,))


def decoded_ipc_files(folder: Path, topic: str, framed: list[bytes], partitions: int, options: dict[str, str],
                      chunk: int) -> tuple[list[str], str]:
    """Records (`framed` values; record i in partition i % `partitions`) decoded by `decode_batch` with the
    `pykafka` decoding `options` (see `payload_plan`) into Arrow IPC files of Spark's Kafka schema, one a
    partition, as the source hands them to Spark: (the files, their schema as DDL) for `ipc-ceiling`."""
    from kafka_spark.formats.columns import decode_batch
    from kafka_spark.formats.spark_ddl import struct_fields_ddl

    plan = payload_plan(options, topic)
    files, schema = [], None
    for partition in range(partitions):
        path = str(folder / f"part-{partition}.arrow")
        values = framed[partition::partitions]
        writer = None
        for at in range(0, len(values), chunk):
            part = values[at:at + chunk]
            n = len(part)
            decoded = decode_batch(pa.RecordBatch.from_arrays([pa.array(part, pa.binary())], names=["value"]),
                                   plan).column("value")
            batch = pa.RecordBatch.from_arrays([
                pa.nulls(n, pa.binary()), decoded, pa.array([topic] * n, pa.string()),
                pa.array([partition] * n, pa.int32()), pa.array(range(at, at + n), pa.int64()),
                pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32()),
            ], names=["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"])
            if writer is None:
                schema = batch.schema
                writer = pa.ipc.new_file(path, schema)
            writer.write_batch(batch)
        assert writer is not None
        writer.close()
        files.append(path)
    assert schema is not None
    return files, struct_fields_ddl(pa.struct(list(schema)))


class IpcCeiling(DataSource):
    """Rows made beforehand, handed to Spark as they are: each Arrow IPC file of `files` (comma-separated) is one
    partition, its batches memory-mapped and yielded; `ddl` is their schema. What any Python source pays to hand
    Spark those rows, whatever it did to make them."""

    @classmethod
    def name(cls) -> str:
        return IPC_NAME

    def schema(self) -> str:
        return self.options["ddl"]

    def reader(self, schema: object) -> DataSourceReader:
        return _IpcReader(dict(self.options))


SINK_NAME = "sink-ceiling"


class _DrainingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class SinkCeiling(DataSource):
    """The fastest any Python sink can take a write's rows: an Arrow writer that receives every batch Spark
    hands it and does nothing with them (no producer, no broker). Takes and ignores any option."""

    @classmethod
    def name(cls) -> str:
        return SINK_NAME

    def writer(self, schema: object, overwrite: bool) -> DataSourceWriter:
        return _DrainingWriter()


def register(spark: object) -> None:
    """Make `format("arrow-ceiling")`, `format("parquet-ceiling")`, `format("ipc-ceiling")` and
    `format("sink-ceiling")` available in `spark`, shipping this module to the workers by value."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(ArrowCeiling)  # type: ignore[attr-defined]
    spark.dataSource.register(ParquetCeiling)  # type: ignore[attr-defined]
    spark.dataSource.register(IpcCeiling)  # type: ignore[attr-defined]
    spark.dataSource.register(SinkCeiling)  # type: ignore[attr-defined]

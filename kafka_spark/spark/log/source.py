"""`spark.read.format("pykafka-log")`: Kafka's segment files read straight off disk (or an object store),
with pykafka's options and schema, so that a query switches between the two by its format name.

Like `pykafka`, it takes the Delta sink's internal direct-write options (spark/source/direct_write.py): each task then
writes its range as the table's files and yields the file rows instead of the records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from kafka_spark.errors import ConfigError
from kafka_spark.spark.log.options import SOURCE_NAME, LogOptions, parse_log_options
from kafka_spark.spark.schema import kafka_ddl
from kafka_spark.spark.source.direct_write import DirectWrite, direct_write
from kafka_spark.spark.source.payloads import query_plan

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.spark.log.planner import LogRange


class KafkaLogDataSource(DataSource):
    """Reads the partitions of Kafka log dirs (`path`) with Spark's Kafka-source options and schema."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        # Spark calls this at load(): validating here makes bad options fail when the DataFrame is defined.
        source = parse_log_options(self.options, "any").source
        direct = direct_write(self.options)
        if direct is not None:
            return direct.rows_ddl
        return kafka_ddl(source.include_headers, query_plan(self, source))

    def reader(self, schema: object) -> DataSourceReader:
        options = parse_log_options(self.options, "batch")
        plan = query_plan(self, options.source)
        return KafkaLogBatchReader(replace(options, source=replace(options.source, payload_plan=plan)),
                                   direct_write(self.options))

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        raise ConfigError("pykafka-log reads log files in batch queries only (spark.read); for a stream, read the "
                          "brokers with readStream.format('pykafka')")


class LogInputPartition(InputPartition):
    """One task: a partition's offsets [start, end) in the log dir `log_dir` (plain picklable data)."""

    def __init__(self, r: LogRange) -> None:
        super().__init__((r.log_dir, r.topic, r.partition, r.start, r.end))
        self.range = r

    def __repr__(self) -> str:
        r = self.range
        return f"LogInputPartition({r.topic}-{r.partition} [{r.start}, {r.end}) in {r.log_dir})"


class KafkaLogBatchReader(DataSourceReader):
    """Plans tasks from the files on the driver; each task reads its offsets on an executor."""

    def __init__(self, options: LogOptions, direct: DirectWrite | None = None) -> None:
        self.options = options
        self.direct = direct

    def partitions(self) -> Sequence[InputPartition]:
        from kafka_spark.spark.log.planner import plan_log_batch

        return [LogInputPartition(r) for r in plan_log_batch(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_spark.spark.log.reader import read_log_range
        from kafka_spark.spark.source.reader import decoded

        # With no ranges to read, Spark still runs one task, with no partition.
        if not isinstance(partition, LogInputPartition):
            return
        plan = self.options.source.payload_plan
        views = self.direct is not None and self.direct.views_for(plan)
        batches = decoded(read_log_range(self.options, partition.range, views=views), plan)
        if self.direct is not None:
            yield from self.direct.write(batches, partition.range)
            return
        yield from batches


__all__ = ["KafkaLogBatchReader", "KafkaLogDataSource", "LogInputPartition"]

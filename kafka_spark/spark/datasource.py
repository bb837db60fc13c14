"""`spark.read.format("pykafka")` / `readStream.format("pykafka")` / `write.format("pykafka")` /
`writeStream.format("pykafka")`: the DataSource and its batch reader."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)

from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.spark.schema import kafka_ddl
from kafka_spark.spark.source.direct_write import DIRECT_WRITE_OPTIONS, DirectWrite, direct_write
from kafka_spark.spark.source.options import PLANNED_RANGES, SourceOptions, parse_source_options, planned_ranges
from kafka_spark.spark.source.partition import KafkaInputPartition
from kafka_spark.spark.source.payloads import query_plan
from kafka_spark.spark.versions import STREAM_READ, STREAM_WRITE, require_pyspark

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType


class KafkaDataSource(DataSource):
    """Reads Kafka topics with Spark's Kafka-source options and schema, and writes DataFrames to them with
    Spark's Kafka-sink contract, through kafka_spark's own client."""

    @classmethod
    def name(cls) -> str:
        return "pykafka"

    def schema(self) -> str:
        # Spark calls this at load(): validating here makes bad options fail when the DataFrame is defined.
        options = parse_source_options(self.options, "any", own_options=OWN_OPTIONS)
        direct = direct_write(self.options)
        if direct is not None:
            return direct.rows_ddl
        return kafka_ddl(options.include_headers, query_plan(self, options))

    def reader(self, schema: object) -> DataSourceReader:
        options = parse_source_options(self.options, "batch", own_options=OWN_OPTIONS)
        options = replace(options, payload_plan=query_plan(self, options))
        return KafkaBatchReader(with_brokers(options), planned_ranges(self.options, options),
                                direct_write(self.options))

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        require_pyspark("readStream.format('pykafka') (admission control of Python stream sources)", STREAM_READ)
        from kafka_spark.spark.source.stream import KafkaStreamReader

        options = parse_source_options(self.options, "stream")
        return KafkaStreamReader(with_brokers(replace(options, payload_plan=query_plan(self, options))))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from kafka_spark.spark.sink.writer import kafka_writer

        return kafka_writer(dict(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        require_pyspark("writeStream.format('pykafka') (Arrow stream writers)", STREAM_WRITE)
        from kafka_spark.spark.sink.stream import KafkaStreamWriter
        from kafka_spark.spark.sink.writer import checked_sink

        return KafkaStreamWriter(checked_sink(dict(self.options), schema, overwrite))


def with_brokers(options: SourceOptions) -> SourceOptions:
    """With `kafka.zookeeper.connect` alone: the brokers read from ZooKeeper once, at planning, so that
    tasks bootstrap from them directly (and ask ZooKeeper again only when those have moved)."""
    if "zookeeper.connect" not in options.kafka or options.kafka.get("bootstrap.servers"):
        return options
    from kafka_spark.zookeeper.brokers import with_discovered_bootstrap

    return replace(options, kafka=with_discovered_bootstrap(options.kafka))


class KafkaBatchReader(DataSourceReader):
    """Plans offset ranges on the driver (unless `planned` gives them); each task reads one range on an executor."""

    def __init__(self, options: SourceOptions, planned: list[OffsetRange] | None = None,
                 direct: DirectWrite | None = None) -> None:
        # Only validated, picklable options here: connections open in read(), on the executor.
        self.options = options
        self.planned = planned
        self.direct = direct

    def partitions(self) -> Sequence[InputPartition]:
        if self.planned is not None:
            return [KafkaInputPartition(r) for r in self.planned]
        from kafka_spark.spark.source.planner import plan_batch

        return [KafkaInputPartition(r) for r in plan_batch(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_spark.spark.source.reader import read_range

        # With no ranges to read, Spark still runs one task, with no partition.
        if not isinstance(partition, KafkaInputPartition):
            return
        if self.direct is not None:
            views = self.direct.views_for(self.options.payload_plan)
            yield from self.direct.write(read_range(self.options, partition.range, views), partition.range)
            return
        yield from read_range(self.options, partition.range)


# The Delta load's planned ranges and direct write (spark/source/direct_write.py): internal options of this source.
OWN_OPTIONS = (PLANNED_RANGES, *DIRECT_WRITE_OPTIONS)

"""`df.write.format("pykafka")`: each task produces its rows with kafka_spark's producer (at-least-once)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from kafka_spark.errors import ConfigError
from kafka_spark.spark.write_options import SinkOptions, check_columns, parse_sink_options

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.producer import Producer, RecordFuture

# Futures kept before the delivered ones are dropped: bounds memory on large tasks.
_PRUNE_EVERY = 65536


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    records: int


def kafka_writer(options: dict[str, str], schema: StructType, overwrite: bool) -> KafkaArrowWriter:
    """The writer of a `pykafka` write, after Spark's sink checks of the options and columns."""
    if overwrite:
        raise ConfigError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                          "ErrorIfExists (default).")
    sink = parse_sink_options(options)
    check_columns({f.name: f.dataType.simpleString() for f in schema.fields}, sink.topic)
    return KafkaArrowWriter(sink)


class KafkaArrowWriter(DataSourceArrowWriter):
    """Takes Arrow batches of `topic`/`key`/`value`/`partition`/`headers` rows and produces them to Kafka."""

    def __init__(self, options: SinkOptions) -> None:
        # Only picklable, validated options: the producer opens in write(), on the executor.
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        from kafka_spark.client.producer import Producer

        count = 0
        with Producer(self.options.client_config()) as producer:
            futures: list[RecordFuture] = []
            for batch in iterator:
                count += _send_batch(producer, batch, self.options.topic, futures)
                if len(futures) >= _PRUNE_EVERY:
                    futures = _undelivered(futures)
            producer.flush()
            # A failed delivery fails the task with the broker's error (like Spark's sink).
            for future in futures:
                future.get()
        return KafkaCommitMessage(count)


def _undelivered(futures: list[RecordFuture]) -> list[RecordFuture]:
    for future in futures:
        if future.done:
            future.get()  # raises a delivery error now rather than after the rest of the task
    return [f for f in futures if not f.done]


def _send_batch(producer: Producer, batch: pa.RecordBatch, topic: str | None,
                futures: list[RecordFuture]) -> int:
    rows = batch.num_rows
    names = batch.schema.names
    topics = [topic] * rows if topic is not None else batch.column("topic").to_pylist()
    keys = _bytes_column(batch, "key") if "key" in names else [None] * rows
    values = _bytes_column(batch, "value")
    partitions = batch.column("partition").to_pylist() if "partition" in names else [None] * rows
    headers = batch.column("headers").to_pylist() if "headers" in names else [None] * rows
    for t, k, v, p, h in zip(topics, keys, values, partitions, headers, strict=True):
        if t is None:
            raise ConfigError("The Kafka message data sent to the producer contains a null topic. Use the `topic` "
                              "option for setting a default topic.")
        pairs = [(e["key"], e["value"]) for e in h] if h else ()
        futures.append(producer.send(t, v, key=k, headers=pairs, partition=p))
    return rows


def _bytes_column(batch: pa.RecordBatch, name: str) -> list[bytes | None]:
    import pyarrow as pa

    column = batch.column(name)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        # Strings go out as their UTF-8 bytes, as Spark's sink casts them to binary.
        column = column.cast(pa.binary())
    return column.to_pylist()

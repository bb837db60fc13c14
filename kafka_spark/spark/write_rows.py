"""Rows of a `pykafka` write (Arrow batches of Spark's Kafka-sink columns) into a producer (no pyspark here)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.producer import Producer, RecordFuture

# Futures kept before the delivered ones are dropped: bounds memory on large tasks.
_PRUNE_EVERY = 65536


def produce_rows(producer: Producer, batches: Iterable[pa.RecordBatch], topic: str | None) -> int:
    """Send every row, flush, and raise the first delivery error (as Spark's sink fails the task); the count."""
    count = 0
    futures: list[RecordFuture] = []
    for batch in batches:
        count += _send_batch(producer, batch, topic, futures)
        if len(futures) >= _PRUNE_EVERY:
            futures = _undelivered(futures)
    producer.flush()
    for future in futures:
        future.get()
    return count


def first_topic(batch: pa.RecordBatch, topic: str | None) -> str | None:
    """The topic of the first row (the `topic` option wins over the column)."""
    if topic is not None or batch.num_rows == 0:
        return topic
    return batch.column("topic")[0].as_py()


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

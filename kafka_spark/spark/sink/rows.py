"""Rows of a `pykafka` write (Arrow batches of Spark's Kafka-sink columns) into a producer (no pyspark here), with
keys and values serialised first when `keyFormat` / `valueFormat` ask for it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_spark.client.producer.producer import Producer, SentRecords
    from kafka_spark.formats.encoding import WritePayloads

# Records sent before the delivered calls are dropped: bounds memory on large tasks (a call's Arrow columns live
# until it is dropped). Spark hands Arrow batches of 10,000 rows.
_PRUNE_EVERY = 10000


def produce_rows(producer: Producer, batches: Iterable[pa.RecordBatch], topic: str | None) -> int:
    """Send every row, flush, and raise the first delivery error (as Spark's sink fails the task); the count."""
    count = 0
    since_prune = 0
    sent: list[SentRecords] = []
    for batch in batches:
        rows = _send_batch(producer, batch, topic, sent)
        count += rows
        since_prune += rows
        if since_prune >= _PRUNE_EVERY:
            sent, since_prune = _undelivered(sent), 0
    producer.flush()
    for records in sent:
        records.get()
    return count


def serialised(batches: Iterable[pa.RecordBatch], payloads: WritePayloads | None,
               topic: str | None) -> Iterator[pa.RecordBatch]:
    """`batches` with the `key` / `value` columns `payloads` serialises turned into Confluent-framed bytes, each
    row's with the writer schema of its topic (unchanged without `payloads`). PayloadError for a row whose key
    or value does not fit."""
    if payloads is None:
        yield from batches
        return
    import pyarrow as pa

    from kafka_spark.formats.encoding import encode_side

    for batch in batches:
        if not batch.num_rows:
            yield batch
            continue
        topics = _topics(batch, topic)
        columns = list(batch.columns)
        for side in payloads.sides:
            if side.side in batch.schema.names:
                at = batch.schema.get_field_index(side.side)
                columns[at] = encode_side(side, payloads.registry, columns[at], topics)
        yield pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def first_topic(batch: pa.RecordBatch, topic: str | None) -> str | None:
    """The topic of the first row (the `topic` option wins over the column)."""
    if topic is not None or batch.num_rows == 0:
        return topic
    return batch.column("topic")[0].as_py()


def _undelivered(sent: list[SentRecords]) -> list[SentRecords]:
    for records in sent:
        if records.done:
            records.get()  # raises a delivery error now rather than after the rest of the task
    return [r for r in sent if not r.done]


def _send_batch(producer: Producer, batch: pa.RecordBatch, topic: str | None, sent: list[SentRecords]) -> int:
    # One send_many() per Arrow batch, given the Arrow columns (strings go out as their UTF-8 bytes, as Spark's
    # sink casts them to binary): the producer queues the rows as one send() per row would, and without headers
    # encodes them from the columns.
    rows = batch.num_rows
    if not rows:
        return 0
    names = batch.schema.names
    keys = batch.column("key") if "key" in names else None
    partitions = batch.column("partition") if "partition" in names else None
    headers = _headers(batch.column("headers")) if "headers" in names else None
    sent.append(producer.send_many(_topics(batch, topic), batch.column("value"), keys=keys, partitions=partitions,
                                   headers=headers))
    return rows


def _topics(batch: pa.RecordBatch, topic: str | None) -> str | list[str]:
    """The `topic` option, else each row's topic (which must not be null): one name when every row has it."""
    if topic is not None:
        return topic
    column = batch.column("topic")
    if column.null_count:
        raise ConfigError("The Kafka message data sent to the producer contains a null topic. Use the `topic` "
                          "option for setting a default topic.")
    import pyarrow.compute as pc

    names = pc.unique(column)
    return names[0].as_py() if len(names) == 1 else column.to_pylist()


def _headers(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None] | None:
    # None when no row has a header: the rows are then encoded from their columns
    import pyarrow.compute as pc

    if column.null_count == len(column) or not pc.sum(pc.list_value_length(column)).as_py():
        return None
    return [[(e["key"], e["value"]) for e in h] if h else None for h in column.to_pylist()]

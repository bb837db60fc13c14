"""Helpers of the Iceberg tests: numbered records, and what an independent reader (pyiceberg's scan) finds."""

from __future__ import annotations

import uuid
from collections import Counter

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.producer import Producer


def new_topic(kafka, partitions: int = 2) -> str:
    # A name that is also an identifier, so a routed table named after it needs no quoting.
    topic = f"ice_{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, partitions=partitions)
    return topic


def produce(producer: Producer, topic: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i % 7).encode())
    producer.flush()


def scanned(catalog, table: str) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row, as pyiceberg reads the table, sorted."""
    rows = catalog.open().load_table(catalog.identifier(table)).scan(
        selected_fields=("topic", "partition", "offset")).to_arrow().to_pylist()
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def every_offset_once(catalog, table: str, ends: dict[TopicPartition, int]) -> None:
    """The table holds each offset below `ends` exactly once, and nothing else."""
    rows = scanned(catalog, table)
    duplicated = [row for row, n in Counter(rows).items() if n > 1]
    assert not duplicated, duplicated[:10]
    expected = sorted((tp.topic, tp.partition, o) for tp, end in ends.items() for o in range(end))
    assert rows == expected, (len(rows), len(expected))


def summaries(catalog, table: str) -> list[dict[str, str]]:
    """The summaries of the table's snapshots, oldest first."""
    iceberg = catalog.open().load_table(catalog.identifier(table))
    return [dict(s.summary.additional_properties) if s.summary else {} for s in iceberg.snapshots()]

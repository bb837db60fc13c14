"""Registry-framed values that do not decode (another magic byte, a schema id the registry does not know, an Avro
body cut short) in loads into Iceberg: without `dead_letter` the load fails naming the first one and commits
nothing; with it, the decoded records land in the table and the others in the dead-letter table with their own
bytes and the decoder's reason, both snapshots tagged with the sink's batch, each record once, also across a
crash between the two commits. The records are framed by Confluent's own serializer against the harness's
registry; both tables are read back by pyiceberg's scan."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from iceberg_support import new_topic, summaries

from kafka_spark.client.producer.producer import Producer
from kafka_spark.formats.registry.wire import frame
from kafka_spark.iceberg import committed_position, committed_positions, load, start_stream, table_writes
from kafka_spark.sink import BadRecordError, LoadOptions, StreamOptions
from kafka_spark.sink.dead_letters import DEAD_LETTER_COLUMNS

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TABLE, DEAD = "db.orders", "db.orders_bad"
SUMMARY, DEAD_SUMMARY = "kafka-spark.sink.", "kafka-spark.dead-letters."
SCHEMA = {"type": "record", "name": "Order", "namespace": "shop",
          "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
UNKNOWN_ID = 424_242
# What each kind of bad value is, and a part of the reason the decoder must give for it.
MAGIC, UNKNOWN, TRUNCATED = "magic", "unknown id", "truncated"
REASONS = {MAGIC: "magic byte 0x07", UNKNOWN: str(UNKNOWN_ID), TRUNCATED: "truncated Avro payload"}


@pytest.fixture(scope="module")
def registry() -> Iterator[Any]:
    from harness.schema_registry import RegistryServer

    with RegistryServer() as server:
        yield server


class Orders:
    """Records produced to a topic's two partitions: orders framed by Confluent's Avro serializer, or bad values
    of a kind; each remembered with what the sink must make of it."""

    def __init__(self, kafka, registry) -> None:
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer

        self.topic = new_topic(kafka, partitions=2)
        self.serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(SCHEMA),
                                         conf={"auto.register.schemas": True})
        self.producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
        self.next = {0: 0, 1: 0}
        self.good: dict[tuple[int, int], dict[str, Any]] = {}  # (partition, offset) -> the decoded value
        self.bad: dict[tuple[int, int], tuple[bytes, str]] = {}  # (partition, offset) -> (bytes, kind)

    def framed(self, order: dict[str, Any]) -> bytes:
        from confluent_kafka.serialization import MessageField, SerializationContext

        return self.serializer(order, SerializationContext(self.topic, MessageField.VALUE))

    def send(self, records: list[tuple[int, str | None]]) -> None:
        """(partition, None for an order or the kind of bad value) each."""
        for partition, kind in records:
            offset = self.next[partition]
            order = {"id": 1000 * partition + offset, "name": f"order-{partition}-{offset}"}
            if kind is None:
                value = self.framed(order)
                self.good[(partition, offset)] = order
            else:
                value = {MAGIC: b"\x07junk", UNKNOWN: frame(UNKNOWN_ID, b"\x02\x02a"),
                         TRUNCATED: self.framed(order)[:-4]}[kind]
                self.bad[(partition, offset)] = (value, kind)
            self.producer.send(self.topic, value, key=f"k{partition}-{offset}".encode(), partition=partition)
            self.next[partition] += 1
        self.producer.flush()

    def close(self) -> None:
        self.producer.close()


@pytest.fixture
def orders(kafka, registry) -> Iterator[Orders]:
    produced = Orders(kafka, registry)
    # The first bad value is partition 0's offset 1; partition 1 has an unknown id and a truncated body.
    produced.send([(0, None), (0, MAGIC), (0, None), (0, None), (1, None), (1, UNKNOWN), (1, None), (1, TRUNCATED),
                   (1, None)])
    yield produced
    produced.close()


def options(kafka, registry, orders: Orders, sink: str, **extra) -> LoadOptions:
    return LoadOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[orders.topic],
                       sink_id=sink, value_format="avro", schema_registry={"url": registry.url}, **extra)


def rows_of(catalog, table: str) -> list[dict[str, Any]]:
    return catalog.open().load_table(catalog.identifier(table)).scan().to_arrow().to_pylist()


def assert_split(catalog, orders: Orders, sink: str) -> list[dict[str, Any]]:
    """The table holds every decoded record once, with its value; the dead-letter table every other record once,
    with its own key and bytes and the decoder's reason. Returns the dead-letter rows."""
    main, letters = rows_of(catalog, TABLE), rows_of(catalog, DEAD)
    main_keys = [(r["partition"], r["offset"]) for r in main]
    dead_keys = [(r["partition"], r["offset"]) for r in letters]
    assert len(main_keys) == len(set(main_keys)) and len(dead_keys) == len(set(dead_keys)), "a record twice"
    assert {(r["partition"], r["offset"]): r["value"] for r in main} == orders.good
    assert {(r["partition"], r["offset"]): r["value"] for r in letters} == {k: v for k, (v, _) in orders.bad.items()}
    for row in letters:
        kind = orders.bad[(row["partition"], row["offset"])][1]
        assert REASONS[kind] in row["error"], (kind, row["error"])
    assert all(r["key"] == f"k{r['partition']}-{r['offset']}".encode() for r in main + letters)
    assert {r["topic"] for r in main + letters} == {orders.topic} and {r["sink"] for r in letters} == {sink}
    return letters


def records(catalog, table: str, prefix: str, sink: str) -> list[dict[str, Any]]:
    """The sink's record in each snapshot of `table` that has one under `prefix`, oldest first."""
    return [json.loads(s[prefix + sink]) for s in summaries(catalog, table) if prefix + sink in s]


def batches(catalog, table: str, prefix: str, sink: str) -> list[tuple[int, int]]:
    """(batch, dead letters counted) of each snapshot of `table` tagged by `sink` under `prefix`, oldest first."""
    return [(r["batch"], r["dead_letters"]) for r in records(catalog, table, prefix, sink)]


def test_undecodable_values_fail_the_load_or_go_to_the_dead_letter_table_once(kafka, spark, registry, orders,
                                                                              catalog):
    sink = "orders"
    with pytest.raises(BadRecordError) as failure:
        load(spark, options(kafka, registry, orders, sink), catalog)
    error = failure.value
    assert (error.topic, error.partition, error.offset, error.count) == (orders.topic, 0, 1, 3)
    assert REASONS[MAGIC] in error.reason and "Nothing was committed" in str(error)
    assert committed_positions(TABLE, catalog) == {}
    assert not catalog.open().table_exists(catalog.identifier(DEAD))

    opts = options(kafka, registry, orders, sink, dead_letter=DEAD)
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.dead_letters, first.writer) == (
        "committed", 0, 6, 3, "pyiceberg")
    letters = assert_split(catalog, orders, sink)
    assert {r["batch"] for r in letters} == {0}
    # The decoder's own columns stay out of the table; the dead-letter table has the sink's dead-letter columns.
    table = catalog.open().load_table(catalog.identifier(TABLE))
    assert {"valueError", "rawValue", "keyError", "rawKey", "error"}.isdisjoint(f.name for f in table.schema().fields)
    dead_table = catalog.open().load_table(catalog.identifier(DEAD))
    assert [f.name for f in dead_table.schema().fields] == [c for c in DEAD_LETTER_COLUMNS if c != "headers"]
    # Both snapshots hold the main commit's record of batch 0 (its run, offsets and count of dead letters).
    assert batches(catalog, TABLE, SUMMARY, sink) == [(0, 3)]
    assert records(catalog, DEAD, DEAD_SUMMARY, sink) == records(catalog, TABLE, SUMMARY, sink)
    assert committed_positions(DEAD, catalog) == {}  # the dead-letter table is no table of the sink

    # A re-run with nothing new writes neither table.
    snapshots = (len(summaries(catalog, TABLE)), len(summaries(catalog, DEAD)))
    assert load(spark, opts, catalog).status == "up-to-date"
    assert (len(summaries(catalog, TABLE)), len(summaries(catalog, DEAD))) == snapshots
    assert_split(catalog, orders, sink)

    # More records: the next batch goes on in both tables, tagged with its own number.
    orders.send([(0, None), (0, UNKNOWN), (1, TRUNCATED), (1, None)])
    second = load(spark, opts, catalog)
    assert (second.status, second.batch, second.rows, second.dead_letters) == ("committed", 1, 2, 2)
    assert sorted((r["batch"], r["partition"], r["offset"]) for r in assert_split(catalog, orders, sink)) == [
        (0, 0, 1), (0, 1, 1), (0, 1, 3), (1, 0, 5), (1, 1, 5)]
    assert batches(catalog, TABLE, SUMMARY, sink) == [(0, 3), (1, 2)]
    assert records(catalog, DEAD, DEAD_SUMMARY, sink) == records(catalog, TABLE, SUMMARY, sink)
    position = committed_position(TABLE, sink, catalog)
    assert position is not None and {tp.partition: off for tp, off in position.offsets.items()} == {0: 6, 1: 7}


class _Crash(Exception):
    pass


def test_a_crash_before_the_dead_letters_is_repaired_by_decoding_the_batch_again(kafka, spark, registry, orders,
                                                                                  catalog, monkeypatch):
    sink = "orders-crash"
    opts = options(kafka, registry, orders, sink, dead_letter=DEAD)

    def stop(name: str) -> None:
        if name == "before-dead-letters":
            raise _Crash(name)

    monkeypatch.setattr(table_writes, "crash_point", stop)
    with pytest.raises(_Crash):
        load(spark, opts, catalog)
    monkeypatch.undo()
    position = committed_position(TABLE, sink, catalog)
    assert position is not None and (position.batch, position.dead_letters) == (0, 3)
    assert not catalog.open().table_exists(catalog.identifier(DEAD))

    # The next load reads batch 0 again from Kafka, decodes it with the registry and writes its dead letters as
    # batch 0, then commits its own batch and that batch's dead letters.
    orders.send([(0, TRUNCATED), (1, None)])
    result = load(spark, opts, catalog)
    assert (result.batch, result.rows, result.dead_letters) == (1, 1, 1)
    assert sorted((r["batch"], r["partition"], r["offset"]) for r in assert_split(catalog, orders, sink)) == [
        (0, 0, 1), (0, 1, 1), (0, 1, 3), (1, 0, 4)]
    assert [b for b, _ in batches(catalog, DEAD, DEAD_SUMMARY, sink)] == [0, 1]
    assert load(spark, opts, catalog).status == "up-to-date"
    assert [b for b, _ in batches(catalog, DEAD, DEAD_SUMMARY, sink)] == [0, 1]


def test_a_stream_writes_each_micro_batch_s_undecodable_values_as_its_dead_letters(kafka, spark, registry, orders,
                                                                                    catalog):
    sink = "orders-stream"
    opts = StreamOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[orders.topic],
                         sink_id=sink, value_format="avro", schema_registry={"url": registry.url}, dead_letter=DEAD,
                         trigger="available-now", max_offsets_per_trigger=5)
    query = start_stream(spark, opts, catalog)
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    letters = assert_split(catalog, orders, sink)
    counted = batches(catalog, TABLE, SUMMARY, sink)
    assert len(counted) >= 2 and sum(n for _, n in counted) == 3  # 9 offsets, about 5 a micro-batch
    assert Counter(r["batch"] for r in letters) == {b: n for b, n in counted if n}
    assert records(catalog, DEAD, DEAD_SUMMARY, sink) == [
        r for r in records(catalog, TABLE, SUMMARY, sink) if r["dead_letters"]]

"""Iceberg tables whose rows change: columns added (a value schema's, a registry subject's next version, a
nested field) keep every existing field id, types widen as Iceberg allows, narrower rows are written as the
table's types, a type of another kind is refused with nothing committed; and sort orders: new tables created with
`sort_by`, every data file of both writers in the table's order. Read back by pyiceberg's own scan and the data
files themselves."""

from __future__ import annotations

import dataclasses
import decimal
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from iceberg_support import new_topic, produce

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.producer.producer import Producer
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import committed_position, load
from kafka_spark.iceberg.batch_append import append_batch
from kafka_spark.iceberg.evolution import IncompatibleTypeError, SchemaMismatchError
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.iceberg.sort_orders import spelled_order
from kafka_spark.sink import LoadOptions, SinkCommit


def send(producer: Producer, topic: str, values: list[dict[str, Any]]) -> None:
    for value in values:
        producer.send(topic, json.dumps(value).encode(), partition=0)
    producer.flush()


def ids(schema) -> dict[str, int]:
    """Every field's id by its dotted name."""
    from pyiceberg.schema import index_by_name

    return index_by_name(schema)


def file_rows(table) -> Iterator[tuple[Any, pa.Table]]:
    """Each data file of the table's current snapshot, with its rows as the file holds them."""
    for task in table.scan().plan_files():
        with table.io.new_input(task.file.file_path).open() as f:
            yield task.file, pq.read_table(f)


def test_columns_added_keep_field_ids_types_widen_narrower_rows_write_and_other_kinds_are_refused(kafka, spark,
                                                                                                   producer, catalog):
    topic = new_topic(kafka, partitions=1)
    send(producer, topic, [{"n": i, "s": {"a": i}} for i in range(3)])
    base = LoadOptions(table="db.evolving", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       value_schema="n INT, s STRUCT<a: INT>", sort_by=["n desc"],
                       transform="SELECT offset, data.n AS n, data.s AS s FROM kafka")
    assert load(spark, base, catalog).rows == 3
    table = catalog.open().load_table(("db", "evolving"))
    before = ids(table.schema())
    assert set(before) == {"offset", "n", "s", "s.a"}

    send(producer, topic, [{"n": 2**40 + i, "s": {"a": i, "b": f"b{i}"}, "tag": "t"} for i in range(3)])
    wider = dataclasses.replace(base, value_schema="n BIGINT, s STRUCT<a: INT, b: STRING>, tag STRING",
                                transform="SELECT offset, data.n AS n, data.s AS s, data.tag AS tag FROM kafka")
    with pytest.raises(SchemaMismatchError, match=r"schema mismatch detected when writing to the Iceberg table "
                                                  r"db\.evolving: the rows have columns the table lacks: s\.b, tag; "
                                                  r"they widen n \(int → long\)\. Set merge_schema"):
        load(spark, wider, catalog)
    assert committed_position("db.evolving", "default", catalog).batch == 0
    assert table.refresh().schema() == table.schema() and len(table.snapshots()) == 1

    assert load(spark, dataclasses.replace(wider, merge_schema=True), catalog).rows == 3
    schema = table.refresh().schema()
    after = ids(schema)
    assert {name: after[name] for name in before} == before  # every existing field keeps its id
    assert min(after["s.b"], after["tag"]) > max(before.values())
    assert str(schema.find_field("n").field_type) == "long"
    rows = table.scan().to_arrow()
    assert rows.schema.field("n").type == pa.int64()
    assert sorted((r["offset"], r["n"], r["s"]["b"], r["tag"]) for r in rows.to_pylist()) == [
        (0, 0, None, None), (1, 1, None, None), (2, 2, None, None),
        (3, 2**40, "b0", "t"), (4, 2**40 + 1, "b1", "t"), (5, 2**40 + 2, "b2", "t")]
    # pyiceberg's writer wrote each batch's file in the table's order
    for _, data in file_rows(table):
        assert data.column("n").to_pylist() == sorted(data.column("n").to_pylist(), reverse=True)

    # narrower rows (INT for the long column, without the new columns) are written as the table's types
    send(producer, topic, [{"n": 7, "s": {"a": 7}}])
    assert load(spark, base, catalog).rows == 1
    assert ids(table.refresh().schema()) == after
    rows = table.scan().to_arrow().to_pylist()
    assert (6, 7, None, None) in [(r["offset"], r["n"], r["s"]["b"], r["tag"]) for r in rows]
    # a type of another kind is refused whatever merge_schema says, naming the table, the column and both types
    send(producer, topic, [{"n": "eight", "s": {"a": 8}}])
    with pytest.raises(IncompatibleTypeError) as refused:
        load(spark, dataclasses.replace(base, value_schema="n STRING, s STRUCT<a: INT>", merge_schema=True), catalog)
    error = refused.value
    assert (error.table, error.column, error.table_type, error.rows_type) == ("db.evolving", "n", "long", "string")
    assert committed_position("db.evolving", "default", catalog).batch == 2
    assert len(table.refresh().snapshots()) == 3  # the second batch's schema change went in with its rows


def test_decimal_and_float_widen_and_an_other_type_commits_nothing(catalog):
    location = IcebergLocation(catalog, ("db", "widened"))
    tp = TopicPartition("t", 0)

    def commit(batch: int) -> SinkCommit:
        return SinkCommit("default", batch, {tp: batch + 1}, run_id=f"run-{batch}")

    narrow = pa.schema([("d", pa.decimal128(5, 2)), ("f", pa.float32()), ("name", pa.string())])
    append_batch(location, pa.table({"d": [None], "f": [1.5], "name": ["a"]}, schema=narrow), commit(0))
    wide = pa.schema([("d", pa.decimal128(9, 2)), ("f", pa.float64()), ("name", pa.string())])
    append_batch(location, pa.table({"d": [decimal.Decimal("1234567.89")], "f": [2.25], "name": ["b"]}, schema=wide),
                 commit(1), merge_schema=True)
    table = catalog.open().load_table(("db", "widened"))
    rows = table.scan().to_arrow()
    assert (rows.schema.field("d").type, rows.schema.field("f").type) == (pa.decimal128(9, 2), pa.float64())
    assert sorted(rows.to_pylist(), key=lambda r: r["name"]) == [
        {"d": None, "f": 1.5, "name": "a"}, {"d": decimal.Decimal("1234567.89"), "f": 2.25, "name": "b"}]
    with pytest.raises(IncompatibleTypeError, match=r"db\.widened: column name is string in the table but int in "
                                                    r"the rows"):
        append_batch(location, pa.table({"name": pa.array([1], pa.int32())}), commit(2), merge_schema=True)
    assert len(table.refresh().snapshots()) == 2 and committed_position("db.widened", "default", catalog).batch == 1


V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}]}}]}
# The next version adds a field and a nested one, both with defaults (BACKWARD compatible).
V2 = {**V1, "fields": [{"name": "id", "type": "long"},
                       {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
                           {"name": "street", "type": "string"},
                           {"name": "zip", "type": ["null", "string"], "default": None}]}},
                       {"name": "channel", "type": "string", "default": "web"}]}


@pytest.fixture(scope="module")
def registry() -> Iterator[Any]:
    from harness.schema_registry import RegistryServer

    with RegistryServer() as server:
        yield server


def avro_values(registry, topic: str, schema: dict[str, Any], values: list[dict[str, Any]]) -> list[bytes]:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(schema),
                                conf={"auto.register.schemas": True})
    return [serializer(v, SerializationContext(topic, MessageField.VALUE)) for v in values]


def test_a_registry_subjects_next_version_adds_columns_with_merge_schema(kafka, spark, producer, catalog, registry):
    topic = new_topic(kafka, partitions=1)
    for value in avro_values(registry, topic, V1, [{"id": i, "address": {"street": f"s{i}"}} for i in range(2)]):
        producer.send(topic, value, partition=0)
    producer.flush()
    opts = LoadOptions(table="db.orders", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       value_format="avro", schema_registry={"url": registry.url})
    assert load(spark, opts, catalog).rows == 2
    table = catalog.open().load_table(("db", "orders"))
    before = ids(table.schema())

    newer = [{"id": i, "address": {"street": f"s{i}", "zip": f"z{i}"}, "channel": "app"} for i in range(2, 4)]
    for value in avro_values(registry, topic, V2, newer):
        producer.send(topic, value, partition=0)
    producer.flush()
    with pytest.raises(SchemaMismatchError, match=r"columns the table lacks: value\.address\.zip, value\.channel"):
        load(spark, opts, catalog)
    assert load(spark, dataclasses.replace(opts, merge_schema=True), catalog).rows == 2
    after = ids(table.refresh().schema())
    assert {name: after[name] for name in before} == before
    assert min(after["value.address.zip"], after["value.channel"]) > max(before.values())
    rows = sorted(table.scan(selected_fields=("offset", "value")).to_arrow().to_pylist(), key=lambda r: r["offset"])
    assert [(r["value"]["id"], r["value"]["address"]["zip"], r["value"]["channel"]) for r in rows] == [
        (0, None, None), (1, None, None), (2, "z2", "app"), (3, "z3", "app")]


def test_the_direct_writer_sorts_every_file_by_the_tables_order(kafka, spark, producer, catalog):
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 40)
    opts = LoadOptions(table="db.sorted", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       sort_by=["key", "offset desc"], max_records=30)
    first = load(spark, opts, catalog)
    assert (first.writer, first.rows) == ("direct", 30)
    table = catalog.open().load_table(("db", "sorted"))
    order = table.sort_order()
    assert spelled_order(order, table.schema()) == ["key ASC NULLS FIRST", "offset DESC NULLS LAST"]
    # a load without sort_by writes in the table's order; one giving another order is refused before reading
    second = load(spark, dataclasses.replace(opts, sort_by=()), catalog)
    assert (second.writer, second.rows) == ("direct", 10)
    with pytest.raises(ConfigError, match=r"sort_by \(offset ASC NULLS FIRST\) differs from the sort order of the "
                                          r"existing table"):
        load(spark, dataclasses.replace(opts, sort_by=["offset"]), catalog)

    files = list(file_rows(table.refresh()))
    assert len(files) >= 3  # a file per partition of each batch
    for data_file, data in files:
        assert data_file.sort_order_id == order.order_id
        keys = list(zip(data.column("key").to_pylist(), data.column("offset").to_pylist(), strict=True))
        assert keys == sorted(keys, key=lambda k: (k[0], -k[1]))
    assert sum(d.num_rows for _, d in files) == 40

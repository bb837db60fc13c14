"""PostgreSQL -> Debezium's PostgreSQL connector on Kafka Connect, keys and values in Avro through Apicurio's
converter and Apicurio Registry (tests/harness/apicurio.py) -> Kafka -> our sink with `value_format`/`key_format`
"avro", reading the schemas from the registry's Confluent-compatible API -> Delta, nothing in between mocked.

The converter frames each record as Confluent's does (magic byte, schema id) with the registry's content ids,
which the ccompat API serves schemas by. Two tables: `customers` (an integer key; a column added while Debezium
streams, so its value subject gets a second version) and `items` (a composite text and integer key, and the
types whose Avro is Debezium's own: `numeric(12,3)` as an Avro decimal (Debezium's default, precise), `date` as
io.debezium.time.Date days, `timestamp` as MicroTimestamp, `timestamptz` as a ZonedTimestamp string, `uuid` as
io.debezium.data.Uuid, `jsonb` as io.debezium.data.Json); a third, `ticks`, only marks in Kafka the end of the
changes before it. After the snapshot a load makes the Delta tables; after inserts, updates, deletes, primary-key
changes and the added column a second one applies the changes; each time every Delta table equals its PostgreSQL
table row by row, and the decimal column is the writer's DECIMAL(12,3)."""

from __future__ import annotations

import contextlib
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from workload import Comparison, postgres_columns

from kafka_spark.client import KafkaClient
from kafka_spark.delta import committed_position, load_tables
from kafka_spark.sink import LoadOptions, Routing

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PREFIX = "avrodb"
SINK = "avro-cdc"
TABLES = ("customers", "items")  # loaded into Delta; `ticks` only marks the end of the changes in Kafka
KEYS = {"customers": ("id",), "items": ("sku", "warehouse")}
# Columns whose two sides compare in a shared form (see workload.Comparison)
KINDS = {("items", "price"): "decimal", ("items", "made"): "days", ("items", "taken_at"): "micros",
         ("items", "seen_at"): "instant", ("items", "attrs"): "json", ("items", "ratio"): "float"}

SCHEMA = """
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, tier integer, active boolean);
CREATE TABLE items (sku text, warehouse integer, price numeric(12,3), qty bigint, ratio double precision, made date,
                    taken_at timestamp, seen_at timestamptz, tag uuid, attrs jsonb, PRIMARY KEY (sku, warehouse));
CREATE TABLE ticks (id integer PRIMARY KEY);
"""

SEED = """
INSERT INTO customers SELECT i, 'customer ' || i, i % 3, i % 2 = 0 FROM generate_series(1, 12) AS i;
INSERT INTO customers VALUES (13, 'Grüße, it''s "quoted"', NULL, NULL);
INSERT INTO items VALUES
  ('a-1', 1, 12.5, 3, 0.25, '2024-02-29', '2024-02-29 23:59:59.999999', '2024-03-01 00:00:00.5+05:30',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"color": "red", "sizes": [1, 2]}'),
  ('a-1', 2, -999999999.999, 9223372036854775807, -1.5e-7, '1969-12-31', '1969-12-31 23:59:59.000001',
   '1970-01-01 00:00:00Z', NULL, 'null'),
  ('b-2', 1, 0.001, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  ('日本', 7, 100, 1, 3.0, '2000-01-01', '2000-01-01 00:00:00', '2000-01-01 12:00:00-08:00',
   'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '{"nested": {"deep": true}}');
INSERT INTO ticks VALUES (1);
"""

CHANGES = """
BEGIN;
INSERT INTO customers VALUES (14, 'new', 1, true);
UPDATE customers SET name = 'renamed', tier = NULL WHERE id = 2;
DELETE FROM customers WHERE id = 3;
UPDATE customers SET id = 40 WHERE id = 4;
UPDATE items SET price = 13.75, qty = qty + 1, attrs = '{"color": "blue"}' WHERE sku = 'a-1' AND warehouse = 1;
DELETE FROM items WHERE sku = 'b-2';
UPDATE items SET warehouse = 8 WHERE sku = '日本';
INSERT INTO items VALUES ('c-3', 1, 0, 0, 0, '2024-01-01', '2024-01-01 01:02:03.456789', now(), gen_random_uuid(),
                          '[]');
COMMIT;
BEGIN;
DELETE FROM customers WHERE id = 5;
INSERT INTO customers VALUES (5, 'five again', 5, false);
COMMIT;
ALTER TABLE customers ADD COLUMN email text;
INSERT INTO customers VALUES (15, 'with email', 2, true, 'c15@example.com');
UPDATE customers SET email = 'c1@example.com', active = false WHERE id = 1;
UPDATE customers SET tier = 9 WHERE id = 6;
DELETE FROM customers WHERE id = 7;
INSERT INTO ticks VALUES (2);
"""


def topic(table: str) -> str:
    return f"{PREFIX}.public.{table}"


@pytest.fixture
def avro_worker(kafka, postgres, registry, tmp_path: Path) -> Iterator[Any]:
    """A Connect worker running Debezium on `postgres`'s tables, keys and values in Avro through `registry`."""
    from harness.apicurio import avro_converters, connect_classpath
    from harness.kafka_connect import KafkaConnect, debezium_postgres

    postgres.psql(SCHEMA + SEED)
    registry.wait()
    connector = debezium_postgres(postgres, PREFIX, slot="debezium_avro", overrides={
        "decimal.handling.mode": "precise",  # Debezium's default: an Avro decimal (bytes, its scale and precision)
        "table.include.list": ",".join(f"public.{t}" for t in (*TABLES, "ticks")),
    })
    worker = KafkaConnect(kafka.bootstrap, {"avro-inventory": connector}, tmp_path / "connect",
                          converters=avro_converters(registry.registry_url), classpath=connect_classpath())
    with worker:
        yield worker.start()


def end_offsets(bootstrap: str) -> dict[str, int]:
    """Each table topic's end offset (one partition each)."""
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        ends = client.latest_offsets([tp for t in (*TABLES, "ticks") for tp in client.partitions(topic(t))])
    return {tp.topic: offset for tp, offset in ends.items()}


def wait_for_tick(bootstrap: str, ticks: int, timeout: float = 60) -> dict[str, int]:
    """Wait until Kafka holds the event of row `ticks` of `ticks` (so of every earlier transaction: Debezium sends
    them in commit order) and no topic's end moves for half a second; the ends."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):  # a topic not created yet
            ends = end_offsets(bootstrap)
            if ends[topic("ticks")] >= ticks:
                time.sleep(0.5)
                if end_offsets(bootstrap) == ends:
                    return ends
        assert time.monotonic() < deadline, f"Debezium did not send tick {ticks} in {timeout:.0f}s"
        time.sleep(0.2)


COMPARISON = Comparison(KINDS, KEYS)


def assert_tables_equal(postgres: Any, lake: Path) -> None:
    for table in TABLES:
        columns = postgres_columns(postgres, table)
        assert COMPARISON.delta_rows(str(lake / topic(table)), table, columns) == \
            COMPARISON.postgres_rows(postgres, table), table


# both loads are delta-rs's MERGE (the direct writer's); Spark's applies the same batch rows (test_cdc.py)
def test_debezium_avro_through_apicurio_reaches_delta(registry, kafka, postgres, avro_worker, spark, tmp_path):
    lake = tmp_path / "lake"

    def load_all(writer: str) -> Any:
        return load_tables(spark, LoadOptions(
            kafka={"bootstrap.servers": kafka.bootstrap}, pattern=rf"^{PREFIX}\.public\.({'|'.join(TABLES)})$",
            routing=Routing(template=f"{lake}/{{topic}}"), cdc="debezium", cdc_metadata=True, sink_id=SINK,
            value_format="avro", key_format="avro", schema_registry={"url": registry.ccompat_url}, writer=writer))

    wait_for_tick(kafka.bootstrap, 1)  # the snapshot
    first = load_all("direct")
    assert len(first.committed) == len(TABLES), first
    assert_tables_equal(postgres, lake)
    # Debezium's decimal (precise: an Avro decimal) is the writer's exact DECIMAL, not a DOUBLE of its values
    types = {f.name: f.type for f in DeltaTable(str(lake / topic("items"))).schema().fields}
    assert types["price"].type == "decimal(12,3)", types

    # The records are Confluent-framed with ids the registry's Confluent API resolves to the writer's schema.
    with KafkaClient({"bootstrap.servers": kafka.bootstrap}) as client:
        value = client.fetch(topic("items"), 0, 0, 1).read_all().column("value")[0].as_py()
    magic, schema_id = struct.unpack(">bI", value[:5])
    assert magic == 0
    written = json.loads(registry.get(f"/apis/ccompat/v7/schemas/ids/{schema_id}")["schema"])
    assert written["name"] == "Envelope" and written["namespace"] == topic("items")

    postgres.psql(CHANGES)
    ends = wait_for_tick(kafka.bootstrap, 2)
    second = load_all("direct")
    assert len(second.committed) == len(TABLES), second
    assert_tables_equal(postgres, lake)

    # The column added while Debezium streamed made the subject's second version, and the table's column.
    versions = registry.get(f"/apis/ccompat/v7/subjects/{topic('customers')}-value/versions")
    assert len(versions) == 2, versions
    for table in TABLES:
        path = str(lake / topic(table))
        position = committed_position(path, SINK)
        assert position is not None and sum(position.offsets.values()) == ends[topic(table)], table

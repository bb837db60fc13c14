"""The read tasks' last change per key (sink/change_reader.py, delta/task_changes.py) against the SQL parse that
defines it (delta/changes.py): random batches of Debezium and upsert records, in two partitions, go through
both; the tasks either give the SQL parse's rows exactly (names, types, values) or say they are unsure, and
they are unsure of every batch the SQL parse refuses."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pyarrow as pa
import pytest

from kafka_spark.delta.changes import batch_changes
from kafka_spark.delta.task_changes import changes_of
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.records import kafka_schema
from kafka_spark.sink.change_capture import ChangeCapture
from kafka_spark.sink.change_reader import ChangeSpec, read_changes
from kafka_spark.sink.errors import ChangeEventError

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SOURCES: list[dict[str, Any] | None] = [
    {"connector": "postgresql", "lsn": 33_554_432, "ts_ms": 1_700_000_000_000},
    {"connector": "postgresql", "lsn": None, "ts_ms": None},
    None,
    {"connector": "mysql", "file": "mysql-bin.000003", "pos": 4567, "row": 2, "ts_ms": 1},
    {"connector": "mariadb", "file": "binlog.000012", "pos": 10, "row": 300},
    {"connector": "mysql", "file": "binlog", "pos": 10},
    {"connector": "oracle", "scn": "123456789012"},
    {"connector": "oracle", "scn": 77},
    {"connector": "sqlserver", "change_lsn": "00000027:00000758:0003"},
    {"connector": "sqlserver", "change_lsn": "ffffffff:00000758:0003"},
    {"connector": "sqlserver", "change_lsn": "not-an-lsn"},
    {"connector": "mongodb", "ord": 3},
]
# Records the tasks leave to the SQL parse: not JSON, nested values, a truncate, an unknown operation, a row that
# is not an object, an integer beyond BIGINT, a key without its column.
ODD = [
    (b'{"id": 1}', b"{not json"),
    (b'{"id": 2}', b'{"op": "c", "after": {"id": 2, "tags": ["a"]}}'),
    (b'{"id": 3}', b'{"op": "t", "source": {"lsn": 5}}'),
    (b'{"id": 4}', b'{"op": "x", "after": {"id": 4}}'),
    (b'{"id": 5}', b'{"op": "u", "after": 7}'),
    (b'{"id": 6}', b'{"op": "u", "after": {"id": 6, "qty": 92233720368547758070}}'),
    (b'{"other": 7}', b'{"op": "c", "after": {"id": 7}}'),
    (b'"plain"', b'{"op": "c", "after": {"id": 8}}'),
]


def _key(rng: random.Random, key: int) -> bytes:
    form = rng.random()
    if form < 0.6:
        return json.dumps({"id": key}).encode()
    if form < 0.8:  # the same key in other bytes
        return f'{{ "id" :  {key} }}'.encode()
    return json.dumps({"schema": {"type": "struct"}, "payload": {"id": key}}).encode()


def _row(rng: random.Random, key: int, floats: bool, extra: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": key, "name": rng.choice(["a", "b", None, "ü"]), "qty": rng.randrange(-5, 10**12),
                           "flag": rng.choice([True, False, None])}
    row["amount"] = rng.choice([1, 2.5, -0.75, 10**6]) if floats else rng.randrange(100)
    if extra and rng.random() < 0.3:
        row["note"] = rng.choice(["x", None])
    return row


def _debezium(rng: random.Random, key: int, floats: bool, extra: bool) -> bytes | None:
    op = rng.choice("ccruuuud")
    if op == "d" and rng.random() < 0.4:
        return None  # a tombstone
    envelope = {"op": op, "before": _row(rng, key, floats, False) if op in "ud" else None,
                "after": None if op == "d" else _row(rng, key, floats, extra), "source": rng.choice(SOURCES)}
    if rng.random() < 0.3:
        return json.dumps({"schema": {"type": "struct", "fields": []}, "payload": envelope}).encode()
    return json.dumps(envelope).encode()


def _upsert(rng: random.Random, key: int, floats: bool, extra: bool) -> bytes | None:
    return None if rng.random() < 0.15 else json.dumps(_row(rng, key, floats, extra)).encode()


def _batch(seed: int, mode: str, floats: bool, extra: bool, odd: int) -> list[pa.Table]:
    rng = random.Random(seed)
    parts: list[list[dict[str, Any]]] = [[], []]
    make = _debezium if mode == "debezium" else _upsert
    for _ in range(60):
        key = rng.randrange(12)
        part = parts[key % 2] if rng.random() < 0.9 else parts[(key + 1) % 2]  # a key in both partitions
        part.append({"key": _key(rng, key), "value": make(rng, key, floats, extra)})
    for _ in range(odd):
        key_bytes, value = rng.choice(ODD)
        parts[rng.randrange(2)].insert(rng.randrange(10), {"key": key_bytes, "value": value})
    tables = []
    for p, records in enumerate(parts):
        rows = [{**r, "topic": "t", "partition": p, "offset": 100 + i, "timestamp": 1_700_000_000_000_000 + i * 1000,
                 "timestampType": 0} for i, r in enumerate(records)]
        tables.append(pa.Table.from_pylist(rows, schema=kafka_schema()))
    return tables


def _spark_rows(spark, tables: list[pa.Table], capture: ChangeCapture, value_schema: Any):
    df = spark.createDataFrame(pa.concat_tables(tables))
    try:
        changes = batch_changes(df, capture, None, value_schema)
    except ChangeEventError:
        return None
    try:
        assert changes.rows is not None
        rows = changes.rows.collect()
        types = [(f.name, f.dataType.simpleString()) for f in changes.rows.schema.fields]
    except Exception as exc:  # a keyless record or a value its column's type cannot take
        if "kafka-spark" in str(exc) or "CAST" in str(exc).upper():
            return None
        raise
    finally:
        changes.release()
    return types, sorted((tuple(r) for r in rows), key=repr)


def _task_rows(tables: list[pa.Table], capture: ChangeCapture, value_schema: Any):
    spec = msgspec.json.encode(ChangeSpec(capture.mode, capture.key_columns, capture.metadata)).decode()
    rows = []
    for p, table in enumerate(tables):
        r = OffsetRange("t", p, 100, 100 + table.num_rows)
        for batch in read_changes(table.to_batches(max_chunksize=7), r, spec, None):
            rows.extend(batch.to_pylist())
    found = changes_of(rows, capture, None, value_schema)
    if isinstance(found, str):
        return found
    assert found.changes.arrow is not None
    arrow = found.changes.arrow
    spark_names = {pa.int64(): "bigint", pa.int32(): "int", pa.float64(): "double", pa.string(): "string",
                   pa.bool_(): "boolean"}
    types = [(f.name, spark_names[f.type]) for f in arrow.schema]
    return types, sorted((tuple(r.values()) for r in arrow.to_pylist()), key=repr)


CASES = [
    # seed, mode, floats, extra column, odd records, metadata, soft delete, value_schema
    (1, "debezium", False, False, 0, True, False, None),
    (2, "debezium", True, True, 0, True, True, None),
    (3, "debezium", True, False, 0, False, False, "id INT, name STRING, qty BIGINT, flag BOOLEAN, amount DOUBLE"),
    (4, "debezium", False, True, 1, True, False, None),
    (5, "debezium", False, False, 2, False, False, None),
    (6, "upsert", True, True, 0, True, False, None),
    (7, "upsert", False, False, 1, False, True, "id BIGINT, qty INT"),
    (8, "debezium", True, True, 3, True, False, None),
]


@pytest.mark.parametrize(("seed", "mode", "floats", "extra", "odd", "metadata", "soft", "schema"), CASES)
def test_the_read_tasks_give_the_sql_parse_rows_or_are_unsure(spark, seed, mode, floats, extra, odd, metadata, soft,
                                                                  schema):
    from pyspark.sql.types import StructType

    tables = _batch(seed, mode, floats, extra, odd)
    capture = ChangeCapture(mode, (), metadata, soft)
    value_schema = StructType.fromDDL(schema) if schema else None
    expected = _spark_rows(spark, tables, capture, value_schema)
    found = _task_rows(tables, capture, value_schema)
    if expected is None:
        assert isinstance(found, str), f"the SQL parse refused the batch, the tasks gave rows: {found}"
        return
    if odd == 0:
        assert not isinstance(found, str), f"the tasks were unsure of a plain batch: {found}"
    if isinstance(found, str):
        return
    assert found[0] == expected[0]
    assert found[1] == expected[1]

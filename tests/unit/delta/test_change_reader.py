"""A change stream's read task (sink/change_reader.py) and the driver's combine (delta/task_changes.py), without
Spark: the last change per key, the kinds that type the columns, and the records they leave to the SQL parse
(tests/integration/delta/test_cdc_task_parity.py holds them against it)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pyarrow as pa
import pytest

from kafka_spark.delta.changes import DELETED
from kafka_spark.delta.task_changes import TaskChanges, changes_of
from kafka_spark.offsets.ranges import OffsetRange
from kafka_spark.records import kafka_schema
from kafka_spark.sink.change_capture import ChangeCapture
from kafka_spark.sink.change_reader import ChangeSpec, Unsure, _Source, position, read_changes


def _task(records: list[tuple[bytes | None, bytes | None]], capture: ChangeCapture, partition: int = 0,
          first: int = 0) -> dict[str, Any]:
    rows = [{"key": k, "value": v, "topic": "t", "partition": partition, "offset": first + i,
             "timestamp": 1_700_000_000_000_000 + i * 1000, "timestampType": 0} for i, (k, v) in enumerate(records)]
    table = pa.Table.from_pylist(rows, schema=kafka_schema())
    spec = msgspec.json.encode(ChangeSpec(capture.mode, capture.key_columns, capture.metadata)).decode()
    out = [r for b in read_changes(table.to_batches(max_chunksize=2), OffsetRange("t", partition, first,
                                                                                    first + len(rows)), spec, None)
           for r in b.to_pylist()]
    assert len(out) == 1
    return out[0]


def _event(op: str, after: dict[str, Any] | None, **source: Any) -> bytes:
    return json.dumps({"op": op, "before": None, "after": after, "source": source or None}).encode()


def test_each_key_keeps_its_last_change_typed_by_every_row():
    capture = ChangeCapture("debezium", (), metadata=True)
    task = _task([
        (b'{"id": 1}', _event("c", {"id": 1, "amount": 5, "name": "a"}, connector="postgresql", lsn=10, ts_ms=1)),
        (b'{"id": 2}', _event("c", {"id": 2, "amount": 2.5, "name": None}, lsn=11)),
        (b'{"id": 1}', _event("u", {"id": 1, "amount": 7, "name": "b"}, lsn=12, ts_ms=3)),
        (b'{"id": 2}', _event("d", None, lsn=13)),
        (b'{"id": 2}', None),  # the tombstone after the delete
        (b'{"id": 3}', json.dumps({"schema": {"type": "struct"}, "payload": json.loads(
            _event("r", {"id": 3, "amount": 1, "name": "c"}))}).encode()),
    ], capture)
    assert task["unsure"] is None and task["records"] == 6
    kinds = json.loads(task["kinds"])
    assert kinds == {"k": {"id": ["long"]}, "r": {"amount": ["double", "long"], "id": ["long"],
                                                  "name": ["null", "string"]}}
    found = changes_of([task], capture, None, None)
    assert isinstance(found, TaskChanges) and found.freshness is not None
    rows = {r["id"]: r for r in found.changes.to_arrow().to_pylist()}
    # an amount seen as 2.5 in any row makes the column DOUBLE, as schema_of_variant_agg does
    assert rows[1] == {"id": 1, "amount": 7.0, "name": "b", "__op": "u", "__source_ts_ms": 3, "__lsn": 12,
                       DELETED: False}
    assert rows[2]["__op"] == "d" and rows[2][DELETED] and rows[2]["amount"] is None
    assert rows[3]["name"] == "c" and rows[3]["__lsn"] is None
    assert found.changes.columns == ("id", "amount", "name", "__op", "__source_ts_ms", "__lsn")


def test_a_key_changed_in_two_tasks_keeps_its_last_by_partition_and_offset():
    capture = ChangeCapture("upsert", ("id",))
    first = _task([(b'{"id": 1}', b'{"id": 1, "v": "p0"}'), (b'{ "id" : 2 }', b'{"id": 2, "v": "p0"}')], capture)
    second = _task([(b'{"id":1}', b'{"id": 1, "v": "p1"}'), (b'{"id": 2}', None)], capture, partition=1)
    found = changes_of([second, first], capture, None, None)
    assert isinstance(found, TaskChanges)
    rows = sorted(found.changes.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["v"], r[DELETED]) for r in rows] == [(1, "p1", False), (2, None, True)]


@pytest.mark.parametrize(("key", "value", "why"), [
    (b'{"id": 1}', b"{oops", "malformed"),
    (b'{"id": 1}', b'{"op": "t"}', "operation 't'"),
    (b'{"id": 1}', b'{"op": "u", "after": {"id": 1, "tags": [1]}}', "array"),
    (b'{"id": 1}', b'{"op": "u", "after": {"id": 1, "n": 9223372036854775808}}', "9223372036854775807"),
    (b'{"id": 1}', b'{"op": "c"}', "no after row"),
    (None, b'{"op": "c", "after": {"id": 1}}', "without a key"),
    (b"plain", b'{"op": "c", "after": {"id": 1}}', "record key"),
    (b'{"id": null}', b'{"op": "c", "after": {"id": 1}}', "every key column"),
])
def test_what_the_sql_parse_decides_is_left_to_it(key, value, why):
    task = _task([(b'{"id": 0}', _event("c", {"id": 0})), (key, value)], ChangeCapture("debezium"))
    assert task["changes"] is None and why in task["unsure"]
    assert changes_of([task], ChangeCapture("debezium"), None, None) == task["unsure"]


def _struct(**types: Any) -> Any:
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(name, kind, True) for name, kind in types.items()])


def test_values_convert_to_a_known_type_only_exactly():
    from pyspark.sql.types import DoubleType, FloatType, IntegerType, LongType, ShortType

    capture = ChangeCapture("upsert", ("id",))
    task = _task([(b'{"id": 1}', b'{"id": 1, "n": 70000, "x": 3}')], capture)
    narrow = _struct(id=IntegerType(), n=ShortType())
    assert "does not hold" in str(changes_of([task], capture, None, narrow))
    wide = changes_of([task], capture, None, _struct(id=IntegerType(), n=DoubleType(), x=FloatType()))
    assert isinstance(wide, TaskChanges)
    arrow = wide.changes.to_arrow()
    assert arrow.schema.field("id").type == pa.int32() and arrow.column("n").to_pylist() == [70000.0]
    assert arrow.schema.field("x").type == pa.float32()
    task = _task([(b'{"id": 1}', b'{"id": 1, "n": 1.5}')], capture)
    assert "double values for a int64" in str(changes_of([task], capture, None, _struct(n=LongType())))


@pytest.mark.parametrize(("source", "expected"), [
    ({"connector": "postgresql", "lsn": 123}, 123),
    ({"connector": "mysql", "file": "mysql-bin.000003", "pos": 4, "row": 1}, 3 * 2**40 + 4 * 256 + 1),
    ({"connector": "mariadb", "file": "b.000002", "pos": 4, "row": 999}, 2 * 2**40 + 4 * 256 + 255),
    ({"connector": "mysql", "file": "binlog", "pos": 4}, None),
    ({"connector": "mysql", "file": "b.1", "pos": None}, None),
    ({"connector": "oracle", "scn": "0042"}, 42),
    ({"connector": "oracle", "scn": 42}, 42),
    ({"connector": "sqlserver", "change_lsn": "00000027:00000758:0003"}, 0x27 * 2**40 + 0x758 * 2**16 + 3),
    ({"connector": "sqlserver", "change_lsn": "00800000:00000758:0003"}, None),
    ({"connector": "sqlserver", "change_lsn": "27:758"}, None),
    ({"connector": "mongodb", "ord": 1}, None),
])
def test_source_positions(source, expected):
    assert position(_Source(**{k: v for k, v in source.items() if k != "ord"}), 0) == expected


@pytest.mark.parametrize("source", [
    {"connector": "postgresql", "lsn": "123"},
    {"connector": 5},
    {"connector": "oracle", "scn": "1.5"},
    {"connector": "sqlserver", "change_lsn": "1:2:3\r"},
    {"connector": "mysql", "file": "b.0000000000000000000001", "pos": 1},
    {"connector": "mysql", "file": "b.8388608", "pos": 1},
])
def test_source_positions_the_sql_parse_reads_otherwise_are_unsure(source):
    with pytest.raises(Unsure):
        position(_Source(**source), 0)

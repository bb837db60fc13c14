"""`value_schema` on the direct writer: the tasks parse the JSON values into `data` as Spark's `from_json` does,
and a batch holding a value they cannot be sure of, or a record for the dead-letter table, is written by
Spark's writer (saying why) with the same commit protocol, so the table reads as if Spark's writer wrote it all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from delta_support import latest_offsets_of, run_available_now
from deltalake import DeltaTable

from kafka_spark.client.producer.producer import Producer
from kafka_spark.delta import committed_position, load
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.sink.errors import BadRecordError

SCHEMA = ("id BIGINT, name STRING, amount DECIMAL(12,2), ratio DOUBLE, small FLOAT, ok BOOLEAN, level TINYINT, "
          "tags ARRAY<STRING>, attrs MAP<STRING,INT>, address STRUCT<city: STRING, zip: INT>")


def value(i: int) -> bytes:
    # some names longer than the 32 characters Delta's string statistics keep, with characters past ASCII and
    # past the Basic Multilingual Plane where the prefix ends
    name = f"n{i}" if i % 5 else None
    if i % 11 == 3:
        name = f"{'é' * 31}{'😀' if i % 2 else 'z'}{'x' * i}"
    record: dict[str, Any] = {"id": i, "name": name, "ratio": i / 7, "small": i / 4,
                              "ok": i % 2 == 0, "level": i % 100 - 50, "tags": ["a", None, f"t{i}"][: i % 4],
                              "attrs": {"k": i, "z": None} if i % 3 else {}, "address": {"city": "x\u00e9", "zip": i},
                              "extra": {"ignored": [1, 2]}}
    if i % 7 == 0:
        del record["address"]
    text = json.dumps(record, ensure_ascii=False)
    # a DECIMAL as a JSON number with its own digits
    return text.replace('"id":', f'"amount": {i}.{i % 100:02d}, "id":', 1).encode()


def produce(producer: Producer, topic: str, values: list[bytes]) -> None:
    for i, v in enumerate(values):
        producer.send(topic, v, key=str(i % 5).encode())
    producer.flush()


def options(kafka, table: Path, topic: str, writer: str = "auto", **kw: Any) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       value_schema=SCHEMA, writer=writer, **kw)


def rows(spark, table: Path) -> list[tuple]:
    frame = spark.read.format("delta").load(str(table))
    return sorted(tuple(r) for r in frame.select("partition", "offset", "value", "data").collect())


def test_json_parsed_loads_are_direct_and_read_as_spark_writes_them(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    direct, reference = tmp_path / "direct", tmp_path / "spark"
    produce(producer, topic_name, [value(i) for i in range(60)] + [None])  # a tombstone: data null, not bad
    first = load(spark, options(kafka, direct, topic_name))
    assert (first.writer, first.writer_reason, first.rows, first.dead_letters) == ("direct", None, 61, 0)
    assert load(spark, options(kafka, reference, topic_name, writer="spark")).writer == "spark"
    assert rows(spark, direct) == rows(spark, reference)
    read = spark.read.format("delta").load
    assert read(str(direct)).schema == read(str(reference)).schema
    assert DeltaTable(str(direct)).schema().to_json() == DeltaTable(str(reference)).schema().to_json()
    # delta-rs reads the parsed column as Delta on Spark does
    parsed = DeltaTable(str(direct)).to_pyarrow_table(columns=["offset", "partition", "data"]).to_pylist()
    by_spark = {(r["partition"], r["offset"]): r["data"] for r in read(str(reference)).collect()}
    for row in parsed:
        theirs = by_spark[(row["partition"], row["offset"])]
        if theirs is None:
            assert row["data"] is None
            continue
        assert row["data"]["id"] == theirs["id"] and row["data"]["amount"] == theirs["amount"]
        assert dict(row["data"]["attrs"] or []) == (theirs["attrs"] or {})
    # The files' statistics are those Spark's writer gives the same rows (the parsed fields' too, decimals
    # included), and Spark's data skipping uses them.
    def statistics(table: Path) -> list[dict[str, Any]]:
        adds = pa.table(DeltaTable(str(table)).get_add_actions(flatten=False)).to_pylist()
        return sorted(({k: a[k] for k in ("num_records", "null_count", "min", "max")} for a in adds),
                      key=lambda a: a["min"]["offset"])
    assert statistics(direct) == statistics(reference)
    assert statistics(direct)[0]["max"]["data"]["amount"] is not None
    assert read(str(direct)).where("data.id >= 1000").count() == 0


def test_a_batch_with_a_value_left_to_spark_is_written_by_sparks_writer(kafka, spark, producer, topic_name,
                                                                        tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    direct, reference, dead = tmp_path / "direct", tmp_path / "spark", tmp_path / "dead"
    produce(producer, topic_name, [value(i) for i in range(10)])
    assert load(spark, options(kafka, direct, topic_name)).writer == "direct"

    # Spark reads the first JSON value and ignores the rest; the tasks leave such a value to Spark.
    produce(producer, topic_name, [value(10), b'{"id": 11} trailing text', value(12)])
    second = load(spark, options(kafka, direct, topic_name))
    assert (second.writer, second.batch, second.rows) == ("spark", 1, 3)
    assert f"{topic_name} [0] offset 11 is left to Spark's from_json" in second.writer_reason
    # No file of the abandoned direct attempt is left behind: the table's files are its log's.
    on_disk = {str(p.relative_to(direct)) for p in direct.rglob("*.parquet")}
    assert on_disk == set(pa.table(DeltaTable(str(direct)).get_add_actions()).column("path").to_pylist())

    # A record that does not parse: the batch fails as Spark's writer fails it, naming the record.
    produce(producer, topic_name, [value(13), b"not json", value(15)])
    with pytest.raises(BadRecordError, match=f"{topic_name} \\[0\\] offset 14") as failed:
        load(spark, options(kafka, direct, topic_name))
    assert failed.value.offset == 14
    assert committed_position(str(direct), "default").batch == 1
    # With a dead-letter table it lands there, through Spark's writer; the next clean batch is direct again.
    third = load(spark, options(kafka, direct, topic_name, dead_letter=str(dead)))
    assert (third.writer, third.dead_letters, third.rows) == ("spark", 1, 2)
    assert "offset 14" in third.writer_reason
    produce(producer, topic_name, [value(i) for i in range(16, 20)])
    fourth = load(spark, options(kafka, direct, topic_name, dead_letter=str(dead)))
    assert (fourth.writer, fourth.dead_letters, fourth.rows, fourth.start) == ("direct", 0, 4, third.offsets)
    assert fourth.offsets == latest_offsets_of(kafka.bootstrap, topic_name)
    dead_rows = spark.read.format("delta").load(str(dead)).collect()
    assert [(r["offset"], bytes(r["value"])) for r in dead_rows] == [(14, b"not json")]

    # The whole table equals one written by Spark's writer alone from the same records.
    assert load(spark, options(kafka, reference, topic_name, writer="spark", dead_letter=str(tmp_path / "d2"))
                ).dead_letters == 1
    assert rows(spark, direct) == rows(spark, reference)


def test_a_json_parsed_stream_is_direct_and_falls_back_per_micro_batch(kafka, spark, producer, topic_name,
                                                                        tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    table, reference = tmp_path / "t", tmp_path / "ref"
    produce(producer, topic_name, [value(i) for i in range(20)])
    results: list[Any] = []

    def stream() -> StreamOptions:
        return StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                             value_schema=SCHEMA, checkpoint=str(tmp_path / "cp"),
                             on_commit=lambda _, r: results.append(r))

    assert run_available_now(spark, stream()) == 20
    produce(producer, topic_name, [value(20), b'{"id": 21, "ratio": Infinity}', value(23)])  # Spark reads Infinity
    assert run_available_now(spark, stream()) == 3
    produce(producer, topic_name, [value(i) for i in range(24, 30)])
    assert run_available_now(spark, stream()) == 6
    assert [r.writer for r in results] == ["direct", "spark", "direct"]
    assert "is left to Spark's from_json" in results[1].writer_reason
    assert load(spark, options(kafka, reference, topic_name, writer="spark")).rows == 29
    assert rows(spark, table) == rows(spark, reference)

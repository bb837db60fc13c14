"""Values that do not parse with `value_schema` go to an Iceberg dead-letter table beside the table: exactly once,
also across a crash between the two commits (with a second repair racing the first), in a routed load and in a
stream's micro-batches. Both tables are read back by pyiceberg's own scan."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from bad_records import GOOD, MIXED, NOT_JSON, SCHEMA, Produced
from iceberg_support import new_topic, summaries

from kafka_spark.iceberg import (
    committed_position,
    committed_positions,
    load,
    load_tables,
    start_stream,
    table_writes,
)
from kafka_spark.iceberg import dead_letter as iceberg_dead_letter
from kafka_spark.sink import LoadOptions, Routing, StreamOptions
from kafka_spark.sink.crash import CRASH_ENV
from kafka_spark.sink.dead_letters import DEAD_LETTER_COLUMNS

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SCRIPT = Path(__file__).parent / "iceberg_dead_letter_once.py"
TABLE, DEAD = "db.events", "db.bad_records"
SUMMARY, DEAD_SUMMARY = "kafka-spark.sink.", "kafka-spark.dead-letters."
# The suite stops the load at the point in this process (what the tables hold then is what a kill leaves); the
# long schedule (KAFKA_SPARK_KILLS > 2) kills a load process there with SIGKILL.
LONG = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2, reason="long: KAFKA_SPARK_KILLS=10")


@pytest.fixture
def mixed(kafka, producer) -> Produced:
    produced = Produced(producer, new_topic(kafka, partitions=2))
    produced.send(MIXED)
    return produced


def rows_of(catalog, table: str) -> list[dict]:
    return catalog.open().load_table(catalog.identifier(table)).scan().to_arrow().to_pylist()


def assert_split(catalog, produced: Produced, sink: str, table: str = TABLE, dead: str = DEAD) -> list[dict]:
    """Table + dead-letter table = every record produced, each once; the dead letters are exactly the bad ones,
    with their bytes and errors. Returns the dead-letter rows."""
    main, letters = rows_of(catalog, table), rows_of(catalog, dead)
    main_keys = [(r["partition"], r["offset"]) for r in main]
    dead_keys = [(r["partition"], r["offset"]) for r in letters]
    assert len(main_keys) == len(set(main_keys)) and len(dead_keys) == len(set(dead_keys)), "a record twice"
    assert set(main_keys) == produced.good()
    assert {(r["partition"], r["offset"]): (r["value"], r["error"]) for r in letters} == produced.bad()
    assert {r["topic"] for r in main + letters} == {produced.topic} and {r["sink"] for r in letters} == {sink}
    assert all(r["key"] == f"k{r['offset']}".encode() for r in letters)
    return letters


def dead_batches(catalog, sink: str, dead: str = DEAD) -> list[int]:
    """The batch of each of the dead-letter table's snapshots, from their summaries, oldest first."""
    return [json.loads(s[DEAD_SUMMARY + sink])["batch"] for s in summaries(catalog, dead)]


def load_options(kafka, topic: str, sink: str, **extra) -> LoadOptions:
    return LoadOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], sink_id=sink,
                       value_schema=SCHEMA, dead_letter=DEAD, **extra)


def test_bad_values_go_to_the_dead_letter_table_and_the_snapshot_counts_them(kafka, spark, mixed, catalog):
    produced = mixed
    opts = load_options(kafka, produced.topic, "dl")
    first = load(spark, opts, catalog)
    assert (first.status, first.batch, first.rows, first.dead_letters, first.writer) == (
        "committed", 0, 7, 5, "pyiceberg")
    for row in rows_of(catalog, TABLE):  # the parsed value is `data`; a tombstone's is null
        value, _ = produced.records[(row["partition"], row["offset"])]
        assert row["data"] == (None if value is None else {"n": row["offset"],
                                                           "name": f"p{row['partition']}-{row['offset']}"})
    letters = assert_split(catalog, produced, "dl")
    assert {r["batch"] for r in letters} == {0}
    dead_table = catalog.open().load_table(catalog.identifier(DEAD))
    assert [f.name for f in dead_table.schema().fields] == [c for c in DEAD_LETTER_COLUMNS if c != "headers"]
    assert json.loads(summaries(catalog, TABLE)[-1][SUMMARY + "dl"])["dead_letters"] == 5
    assert committed_position(TABLE, "dl", catalog).dead_letters == 5
    assert dead_batches(catalog, "dl") == [0]
    assert committed_positions(DEAD, catalog) == {}  # the dead-letter table is no table of the sink

    # More records: the next load continues where the first ended, in both tables; then nothing is new.
    produced.send([(0, GOOD, None), (0, b"nope", NOT_JSON), (1, GOOD, None)])
    second = load(spark, opts, catalog)
    assert (second.batch, second.rows, second.dead_letters) == (1, 2, 1)
    assert Counter(r["batch"] for r in assert_split(catalog, produced, "dl")) == {0: 5, 1: 1}
    assert load(spark, opts, catalog).status == "up-to-date"
    assert dead_batches(catalog, "dl") == [0, 1]

    # A routed load: `{topic}` in the dead-letter table's name too.
    routed = dataclasses.replace(opts, table=None, sink_id="routed", routing=Routing(template="bronze.{topic}"),
                                 dead_letter="bronze.{topic}_bad")
    (result,) = load_tables(spark, routed, catalog).tables
    assert (result.table, result.rows, result.dead_letters) == (f"bronze.{produced.topic}", 9, 6)
    assert_split(catalog, produced, "routed", f"bronze.{produced.topic}", f"bronze.{produced.topic}_bad")


class _Crash(Exception):
    pass


@pytest.mark.parametrize("kill", [pytest.param(False, id="stopped"), pytest.param(True, id="sigkill", marks=LONG)])
def test_a_crash_between_the_commit_and_its_dead_letters_is_repaired_once(kafka, spark, mixed, catalog,
                                                                          monkeypatch, kill):
    produced, sink = mixed, "crash-test"
    opts = load_options(kafka, produced.topic, sink)
    # Stopped after the table's commit, before the dead letters: the table has the batch, the dead letters do not.
    if kill:
        proc = subprocess.run([sys.executable, str(SCRIPT), kafka.bootstrap, produced.topic, str(catalog.warehouse),
                               TABLE, DEAD, SCHEMA, sink], env={**os.environ, CRASH_ENV: "before-dead-letters"},
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    else:
        def stop(name: str) -> None:
            if name == "before-dead-letters":
                raise _Crash(name)

        monkeypatch.setattr(table_writes, "crash_point", stop)
        with pytest.raises(_Crash):
            load(spark, opts, catalog)
        monkeypatch.undo()
    position = committed_position(TABLE, sink, catalog)
    assert (position.batch, position.dead_letters) == (0, 5)
    assert not catalog.open().table_exists(catalog.identifier(DEAD))

    # The next load writes batch 0's dead letters (read again from Kafka), then its own batch. A second repair of
    # batch 0 commits first, just before the first's commit: that one loses the race and appends nothing.
    raced = []

    def race(name: str) -> None:
        if name == "before-dead-letters-commit" and not raced:
            raced.append(name)
            iceberg_dead_letter.reconcile(spark, catalog, opts, position)

    monkeypatch.setattr(iceberg_dead_letter, "crash_point", race)
    produced.send([(0, b"{", NOT_JSON), (1, GOOD, None)])
    result = load(spark, opts, catalog)
    assert raced and (result.batch, result.rows, result.dead_letters) == (1, 1, 1)
    assert Counter(r["batch"] for r in assert_split(catalog, produced, sink)) == {0: 5, 1: 1}
    assert dead_batches(catalog, sink) == [0, 1]
    # Nothing left to repair: a run with nothing new writes neither table.
    assert load(spark, opts, catalog).status == "up-to-date"
    assert dead_batches(catalog, sink) == [0, 1]


def test_a_stream_writes_each_micro_batch_s_dead_letters(kafka, spark, mixed, catalog):
    produced, sink = mixed, "dl-stream"
    opts = StreamOptions(table=TABLE, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[produced.topic],
                         sink_id=sink, trigger="available-now", max_offsets_per_trigger=4, value_schema=SCHEMA,
                         dead_letter=DEAD, transform="SELECT data.n AS n, topic, partition, offset FROM kafka")
    query = start_stream(spark, opts, catalog)
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    assert query.exception() is None
    letters = assert_split(catalog, produced, sink)
    counted = {record["batch"]: record["dead_letters"] for record in
               (json.loads(s[SUMMARY + sink]) for s in summaries(catalog, TABLE))}
    assert sorted(counted) == [0, 1, 2]  # 12 offsets, 4 a micro-batch
    assert Counter(r["batch"] for r in letters) == {b: n for b, n in counted.items() if n}
    assert dead_batches(catalog, sink) == [b for b, n in sorted(counted.items()) if n]

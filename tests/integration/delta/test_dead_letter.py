"""Values that do not parse with `value_schema`: a dead-letter table beside the table (exactly once, also
across a crash between the two commits and in a stream), or a failure naming the first bad offset."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest
from bad_records import GOOD, MIXED, NOT_JSON, SCHEMA, Produced
from delta_support import run_killable
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load, start_stream
from kafka_spark.delta.position import offsets_dir
from kafka_spark.errors import ConfigError
from kafka_spark.sink import BadRecordError, LoadOptions, StreamOptions
from kafka_spark.sink.position import SinkCommit

DEAD_LETTER_ONCE = Path(__file__).parent / "dead_letter_once.py"
DEAD_LETTER_COLUMNS = ["sink", "batch", "topic", "partition", "offset", "timestamp", "timestampType", "key",
                       "value", "error"]


def assert_split(table: Path, dead: Path, produced: Produced, sink: str) -> list[dict]:
    """Table + dead-letter table = every record produced, each once; the dead letters are exactly the bad
    records, with their values and errors. Read with delta-rs, not Spark. Returns the dead-letter rows."""
    main = DeltaTable(str(table)).to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    letters = DeltaTable(str(dead)).to_pyarrow_table().to_pylist()
    main_keys = [(r["partition"], r["offset"]) for r in main]
    dead_keys = [(r["partition"], r["offset"]) for r in letters]
    assert len(main_keys) == len(set(main_keys)) and len(dead_keys) == len(set(dead_keys)), "a record twice"
    assert set(main_keys) == produced.good()
    assert {(r["partition"], r["offset"]): (r["value"], r["error"]) for r in letters} == produced.bad()
    assert {r["topic"] for r in main + letters} == {produced.topic} and {r["sink"] for r in letters} <= {sink}
    assert all(r["key"] == f"k{r['offset']}".encode() for r in letters)
    return letters


@pytest.fixture
def mixed(kafka, producer, topic_name) -> Produced:
    """A topic of two partitions holding MIXED."""
    kafka.create_topic(topic_name, partitions=2)
    produced = Produced(producer, topic_name)
    produced.send(MIXED)
    return produced


def load_options(kafka, topic: str, table: Path, sink: str, **extra) -> LoadOptions:
    return LoadOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic], sink_id=sink,
                       value_schema=SCHEMA, **extra)


def test_bad_records_go_to_the_dead_letter_table_and_the_offsets_move_past_them(spark, kafka, mixed, tmp_path):
    produced = mixed
    table, dead = tmp_path / "table", tmp_path / "dead"
    opts = load_options(kafka, produced.topic, table, "dl", dead_letter=str(dead))
    first = load(spark, opts)
    assert (first.status, first.batch, first.rows, first.dead_letters) == ("committed", 0, 7, 5)
    assert first.offsets == {tp: 6 for tp in first.offsets} and len(first.offsets) == 2
    # The transform (none here) sees the parsed value as `data`; a tombstone's is null.
    for row in DeltaTable(str(table)).to_pyarrow_table().to_pylist():
        value, _ = produced.records[(row["partition"], row["offset"])]
        expected = None if value is None else {"n": row["offset"], "name": f"p{row['partition']}-{row['offset']}"}
        assert row["data"] == expected
    letters = assert_split(table, dead, produced, "dl")
    assert {r["batch"] for r in letters} == {0}
    assert DeltaTable(str(dead)).schema().to_arrow().names == DEAD_LETTER_COLUMNS
    assert committed_position(str(table), "dl").dead_letters == 5
    dead_log = DeltaTable(str(dead))
    assert dead_log.transaction_version("kafka-spark/dl") == 0
    assert json.loads(dead_log.history(1)[0]["userMetadata"])["dead_letters"] == 5

    # More records: the next load continues exactly where the first ended, in both tables.
    produced.send([(0, GOOD, None), (0, b"nope", NOT_JSON), (1, GOOD, None)])
    second = load(spark, opts)
    assert (second.batch, second.rows, second.dead_letters) == (1, 2, 1)
    letters = assert_split(table, dead, produced, "dl")
    assert Counter(r["batch"] for r in letters) == {0: 5, 1: 1}
    assert DeltaTable(str(dead)).transaction_version("kafka-spark/dl") == 1
    assert load(spark, opts).status == "up-to-date"
    assert DeltaTable(str(dead)).version() == 1


def test_without_a_dead_letter_table_the_lowest_bad_offset_fails_the_load(spark, kafka, producer, topic_name,
                                                                         tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    produced = Produced(producer, topic_name)
    produced.send([(0, GOOD, None), (0, GOOD, None), (1, GOOD, None), (1, GOOD, None)])
    table = tmp_path / "table"
    # The transform's filter drops every bad record (Spark even infers `n IS NOT NULL` from it and evaluates
    # that first): the check still sees every record.
    sql = "SELECT data.n AS n, data.name AS name, topic, partition, offset FROM kafka WHERE data.n >= 0"
    opts = load_options(kafka, topic_name, table, "strict", transform=sql)
    assert load(spark, opts).rows == 4
    version = DeltaTable(str(table)).version()
    produced.send(MIXED)  # bad: partition 0 at offsets 3 and 5, partition 1 at 2, 4 and 5
    with pytest.raises(BadRecordError) as info:
        load(spark, opts)
    error = info.value
    assert (error.topic, error.partition, error.offset, error.reason, error.count) == (topic_name, 1, 2, NOT_JSON, 5)
    assert f"{topic_name} [1] offset 2: {NOT_JSON}" in str(error) and f"{topic_name} [0] offset 3" in str(error)
    assert "dead_letter" in str(error)
    assert DeltaTable(str(table)).version() == version
    assert committed_position(str(table), "strict").batch == 0

    with pytest.raises(ConfigError, match="not a Spark DDL schema"):
        load(spark, dataclasses.replace(opts, value_schema="n INT name"))
    with pytest.raises(ConfigError, match="expected fields"):
        load(spark, dataclasses.replace(opts, value_schema="INT"))
    with pytest.raises(ConfigError, match="needs value_schema"):
        load(spark, dataclasses.replace(opts, value_schema=None, dead_letter=str(tmp_path / "dead")))


def test_a_crash_between_the_commit_and_its_dead_letters_is_repaired_by_the_next_load(spark, kafka, mixed,
                                                                                      tmp_path):
    produced = mixed
    table, dead = tmp_path / "table", tmp_path / "dead"
    code, out = run_killable(DEAD_LETTER_ONCE, kafka.bootstrap, produced.topic, str(table), str(dead), SCHEMA,
                             crash_at="before-dead-letters")
    assert code == -9, out
    position = committed_position(str(table), "crash-test")
    assert (position.batch, position.dead_letters) == (0, 5)
    assert not (dead / "_delta_log").exists()

    # The next load first writes batch 0's dead letters (read again from Kafka), then loads batch 1.
    produced.send([(0, b"{", NOT_JSON), (1, GOOD, None)])
    opts = load_options(kafka, produced.topic, table, "crash-test", dead_letter=str(dead))
    result = load(spark, opts)
    assert (result.batch, result.rows, result.dead_letters) == (1, 1, 1)
    letters = assert_split(table, dead, produced, "crash-test")
    assert Counter(r["batch"] for r in letters) == {0: 5, 1: 1}
    history = DeltaTable(str(dead)).history()
    assert sorted(json.loads(h["userMetadata"])["batch"] for h in history) == [0, 1]
    assert DeltaTable(str(dead)).transaction_version("kafka-spark/crash-test") == 1
    # Nothing left to repair: a run with nothing new writes neither table.
    assert load(spark, opts).status == "up-to-date"
    assert DeltaTable(str(dead)).version() == 1


def test_a_stream_writes_each_micro_batch_s_dead_letters(spark, kafka, mixed, tmp_path):
    produced = mixed
    table, dead = tmp_path / "table", tmp_path / "dead"
    opts = StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[produced.topic],
                         sink_id="dl-stream", trigger="available-now", max_offsets_per_trigger=4,
                         value_schema=SCHEMA, dead_letter=str(dead),
                         transform="SELECT data.n AS n, topic, partition, offset FROM kafka")
    query = start_stream(spark, opts)
    try:
        assert query.awaitTermination(300), "the AvailableNow stream did not finish"
    finally:
        query.stop()
    letters = assert_split(table, dead, produced, "dl-stream")
    position = committed_position(str(table), "dl-stream")
    assert position.batch == 2  # 12 offsets, 4 a micro-batch
    # Each micro-batch's commit counts the dead letters written with its batch number.
    counted = {}
    for batch in range(position.batch + 1):
        kept = offsets_dir(str(table), "dl-stream") / f"{batch}.json"
        counted[batch] = SinkCommit.from_json(kept.read_text(), str(kept)).dead_letters
    assert Counter(r["batch"] for r in letters) == {b: n for b, n in counted.items() if n}
    assert DeltaTable(str(dead)).transaction_version("kafka-spark/dl-stream") == max(b for b, n in counted.items() if n)

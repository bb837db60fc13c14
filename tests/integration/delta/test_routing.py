"""Many topics into one Delta table each: a routed batch load of 30+ topics, then a routed stream that picks
up topics created while it runs, keeps a failing table from blocking the others, lets a table gain a column,
and survives SIGKILLs with every table holding exactly its topic's records once."""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
import time
from pathlib import Path

import pytest
from delta_support import KILLS, keep_producing, latest_offsets_of, produce_numbered, run_killable
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from routing_once import SINK, routed_options

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.topics import NewTopic, create_topics
from kafka_spark.delta import committed_position, load_tables, start_stream, tables_lag
from kafka_spark.sink import LoadOptions, MultiLoadResult, Routing, StreamOptions, TableCommitError, TableSettings

ROUTING_ONCE = Path(__file__).parent / "routing_once.py"


def flatten_json(df):
    """Every JSON key of the batch's values as a column: a table whose payload gains a field gains a column."""
    from pyspark.sql import functions as F

    text = F.col("value").cast("string")
    keys = sorted(r[0] for r in df.select(F.explode(F.json_object_keys(text))).distinct().collect())
    return df.select("topic", "partition", "offset", *(F.get_json_object(text, f"$.{k}").alias(k) for k in keys))


def create(bootstrap: str, topics: list[str], partitions: int = 1) -> None:
    with Cluster({"bootstrap.servers": bootstrap}) as cluster:
        create_topics(cluster, [NewTopic(t, partitions) for t in topics])


def send(producer, topic: str, values: list[bytes]) -> None:
    """The values, delivered before it returns (a load started next must see them)."""
    for n, value in enumerate(values):
        producer.send(topic, value, key=str(n).encode())
    producer.flush()


def keys_in(table: Path) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row, read by delta-rs; [] when the table does not exist."""
    try:
        found = DeltaTable(str(table))
    except TableNotFoundError:  # not created yet, or its first commit is being written
        return []
    rows = found.to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    return [(r["topic"], r["partition"], r["offset"]) for r in rows]


def expected_keys(bootstrap: str, topic: str) -> set[tuple[str, int, int]]:
    return {(topic, tp.partition, o) for tp, end in latest_offsets_of(bootstrap, topic).items() for o in range(end)}


def assert_exact(bootstrap: str, table: Path, topic: str, *, dead: Path | None = None) -> None:
    """The table (and its dead-letter table) hold every record of the topic once, and nothing else."""
    keys = keys_in(table) + (keys_in(dead) if dead else [])
    assert len(keys) == len(set(keys)), f"{table}: a record was written twice"
    assert set(keys) == expected_keys(bootstrap, topic), table


def test_thirty_topics_load_then_stream_into_a_table_each(spark, kafka, producer, topic_name, tmp_path):
    prefix = topic_name[-8:] + "-bronze"
    topics = [f"{prefix}-t{i:02d}" for i in range(30)]
    bad, evolving, strict = topics[1], topics[2], topics[3]
    create(kafka.bootstrap, topics[:10], partitions=2)
    create(kafka.bootstrap, topics[10:])
    for topic in topics:
        produce_numbered(producer, topic, 3)
    send(producer, bad, [b'{"n":7}', b"nope"])
    lake, dead = tmp_path / "bronze", tmp_path / "dead"
    routing = Routing(template=f"{lake}/{{topic}}", overrides={
        bad: TableSettings(value_schema="n INT", dead_letter=str(dead)),
        evolving: TableSettings(transform=flatten_json, merge_schema=True),
        strict: TableSettings(value_schema="n INT"),
    })
    kafka_conf = {"bootstrap.servers": kafka.bootstrap}
    # "auto": the raw and JSON-parsed tables' files come from one read (the direct writer); the transform's
    # table goes through Spark's writer, and so does the batch with a record for the dead-letter table.
    opts = LoadOptions(kafka=kafka_conf, pattern=f"^{prefix}-", sink_id="bronze", routing=routing, writer="auto")

    spark.sparkContext.setJobGroup("routed-load", "the first routed load")
    first = load_tables(spark, opts)
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup("routed-load")
    spark.sparkContext.setJobGroup("", "")
    assert (first.status, len(first.tables), first.rows) == ("committed", 30, 91)
    writers = {r.topic: (r.writer, r.writer_reason) for r in first.tables}
    assert {writers[t][0] for t in topics if t not in (bad, evolving)} == {"direct"}
    assert writers[evolving] == ("spark", "a transform makes the rows in Spark SQL")
    assert writers[bad][0] == "spark"
    assert re.search(f"{bad} \\[\\d\\] offset \\d+ is left to Spark's from_json", writers[bad][1])
    # One read for the 29 direct tables, the two others' jobs (parsing, dead letters, the write), against two
    # or more a table (60+) were all 30 written by Spark's writer.
    assert len(jobs) < 20, jobs
    assert first.by_table()[f"{lake}/{bad}"].dead_letters == 1
    assert set(first.lag().values()) == {0}
    lags = tables_lag(opts)
    assert len(lags) == 30 and all(lag is not None and lag.total == 0 for lag in lags.values())
    for topic in topics:
        assert_exact(kafka.bootstrap, lake / topic, topic, dead=dead if topic == bad else None)
        assert committed_position(str(lake / topic), "bronze").batch == 0
    assert DeltaTable(str(lake / evolving)).schema().to_arrow().names == ["topic", "partition", "offset", "n"]
    summary = first.summary()
    assert summary["failed"] == [] and {t["status"] for t in summary["tables"]} == {"committed"}

    # A bad record in a table without a dead-letter table: fail-fast names it once the batch's other
    # commits (which run side by side) have finished; `continue` commits every other table and reports it.
    produce_numbered(producer, topics[0], 2, start=3)
    send(producer, strict, [b"{oops"])
    produce_numbered(producer, topics[29], 2, start=3)
    with pytest.raises(TableCommitError, match=f"table {lake}/{strict}") as info:
        load_tables(spark, opts)
    statuses = {r.table: r.status for r in info.value.result.tables}
    assert [statuses[f"{lake}/{t}"] for t in (topics[0], strict, topics[29])] == ["committed", "failed", "committed"]
    assert [r.topic for r in info.value.result.tables if r.status != "up-to-date"] == [topics[0], strict, topics[29]]
    assert_exact(kafka.bootstrap, lake / topics[0], topics[0])
    assert_exact(kafka.bootstrap, lake / topics[29], topics[29])
    produce_numbered(producer, topics[29], 2, start=5)
    carry_on = dataclasses.replace(opts, routing=dataclasses.replace(routing, on_table_error="continue"))
    second = load_tables(spark, carry_on)
    assert second.status == "partial" and [r.table for r in second.failed] == [f"{lake}/{strict}"]
    assert "BadRecordError" in (second.failed[0].error or "")
    assert [r.table for r in second.committed] == [f"{lake}/{topics[29]}"]
    assert_exact(kafka.bootstrap, lake / topics[29], topics[29])

    # The stream: three topics created while it runs, a payload that gains a field, the failing table
    # retried at every micro-batch, and the others never held back.
    triggers: list[MultiLoadResult] = []
    stream = StreamOptions(kafka=kafka_conf, pattern=f"^{prefix}-", sink_id="bronze", trigger="1s", writer="auto",
                           routing=dataclasses.replace(routing, on_table_error="continue"),
                           checkpoint=str(tmp_path / "checkpoint"), on_trigger=lambda _, r: triggers.append(r))
    query = start_stream(spark, stream)
    try:
        # Placed at the tables' offsets, the query names every partition it starts with: no new topic until then.
        while not query.recentProgress:
            time.sleep(0.2)
        later = [f"{prefix}-new{i}" for i in range(3)]
        create(kafka.bootstrap, later)
        for topic in later:
            produce_numbered(producer, topic, 4)
        send(producer, evolving, [b'{"n":3,"extra":"x"}'])
        produce_numbered(producer, topics[5], 3, start=3)
        deadline = time.monotonic() + 180
        watched = [*later, evolving, topics[5]]
        while time.monotonic() < deadline and not all(
                set(keys_in(lake / t)) == expected_keys(kafka.bootstrap, t) for t in watched):
            assert query.exception() is None
            time.sleep(1)
    finally:
        query.stop()
    for topic in watched:
        assert_exact(kafka.bootstrap, lake / topic, topic)
    evolved = DeltaTable(str(lake / evolving)).to_pyarrow_table().to_pylist()
    assert sorted((r["n"], r["extra"]) for r in evolved)[-1] == ("3", "x")
    assert any(f"{lake}/{strict}" in [r.table for r in t.failed] for t in triggers)
    assert all(t.driver_seconds >= 0 and t.seconds > 0 for t in triggers)
    # each table's commit its own time (the metrics' commit seconds), within its micro-batch's
    assert all(0 < r.seconds <= t.seconds for t in triggers for r in t.committed)
    # Each micro-batch knows its tables' lag against the brokers' latest offsets when it committed.
    lags = [t.lag() for t in triggers if t.committed]
    assert lags and all(set(lag) >= {r.table for r in t.committed} for lag, t in
                        zip(lags, [t for t in triggers if t.committed], strict=True))
    assert all(v >= 0 for lag in lags for v in lag.values())

    # The failing table gets a dead-letter table: the next micro-batch (any topic's new records make one)
    # reads its gap from Kafka and catches it up.
    produce_numbered(producer, topics[6], 1, start=3)
    fixed = dataclasses.replace(routing, overrides={**routing.overrides, strict: TableSettings(
        value_schema="n INT", dead_letter=str(tmp_path / "strict-dead"))})
    query = start_stream(spark, dataclasses.replace(stream, routing=fixed, trigger="available-now"))
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    assert query.exception() is None
    assert_exact(kafka.bootstrap, lake / strict, strict, dead=tmp_path / "strict-dead")
    for topic in topics + later:
        assert_exact(kafka.bootstrap, lake / topic, topic, dead=dead if topic == bad else
                     tmp_path / "strict-dead" if topic == strict else None)


def test_sigkills_of_a_routed_stream_keep_every_table_exact(spark, kafka, producer, topic_name, tmp_path):
    """Killed right after a table's commit (the others not yet written), then at random moments, some
    restarts without the checkpoint (the first of them the second run; KAFKA_SPARK_KILLS=10 for the long
    schedule); a topic appears meanwhile. The runs alternate between Spark's writer and the direct one, so each
    writer resumes the other's tables."""
    prefix = topic_name[-8:] + "-kill"
    topics = [f"{prefix}-{i}" for i in range(4)]
    create(kafka.bootstrap, topics, partitions=2)
    lake = tmp_path / "bronze"
    rng = random.Random(20261124)
    kills = max(2, KILLS - 1)
    outcomes: list[tuple[str, int]] = []
    with keep_producing(producer, topics[0], 0, 20), keep_producing(producer, topics[1], 0, 7):
        for attempt in range(2 * kills):
            if sum(1 for _, code in outcomes if code != 0) >= kills:
                break
            if attempt % 3 == 1:  # a restart without the checkpoint resumes from the tables alone
                shutil.rmtree(lake / "_kafka_spark" / "checkpoints", ignore_errors=True)
            if attempt == 1:  # a topic created between two runs
                create(kafka.bootstrap, [f"{prefix}-late"])
                produce_numbered(producer, f"{prefix}-late", 10)
            crash_at = "after-commit" if attempt == 0 else None
            writer = "direct" if attempt % 2 else "spark"
            code, out = run_killable(ROUTING_ONCE, kafka.bootstrap, f"^{prefix}-", str(lake), "1s", "60", writer,
                                     crash_at=crash_at, kill_after=None if crash_at else rng.uniform(1.0, 5.0),
                                     ready="started")
            assert code in (0, -9), out
            outcomes.append((crash_at or "kill", code))
        produce_numbered(producer, topics[2], 5)
    assert sum(1 for _, code in outcomes if code != 0) >= kills, outcomes
    # The catch-up runs in this process: the tables alone tell it where each topic stands.
    query = start_stream(spark, routed_options(kafka.bootstrap, f"^{prefix}-", str(lake), "available-now", None,
                                               writer="direct"))
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    assert query.exception() is None
    for topic in [*topics, f"{prefix}-late"]:
        assert_exact(kafka.bootstrap, lake / topic, topic)
    assert committed_position(str(lake / topics[0]), SINK).offsets == latest_offsets_of(kafka.bootstrap, topics[0])

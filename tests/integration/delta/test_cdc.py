"""Change data capture into Delta: Debezium change events and keyed upserts applied as upserts and deletes,
exactly once, each table compared with its source table as the events' producer kept it."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from cdc_events import SourceTable, table_state
from delta_support import latest_offsets_of
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load, load_tables
from kafka_spark.delta.merge_commit import merge_commit
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, Routing
from kafka_spark.sink.errors import BatchAlreadyCommittedError, ChangeEventError
from kafka_spark.sink.position import SinkCommit

pytestmark = [pytest.mark.integration, pytest.mark.spark]
LONG = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2, reason="long: KAFKA_SPARK_KILLS=10")


def _options(kafka, topic: str, table: str, **extra) -> LoadOptions:
    return LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                       cdc="debezium", **extra)


# Spark's MERGE, and delta-rs's (the direct writer's, which `auto` chooses for a table given by path).
# Spark's MERGE of this test runs in the long schedule only (KAFKA_SPARK_KILLS=10): the suite's Spark MERGE is the
# soft-delete test's.
@pytest.mark.parametrize("asked,writer", [pytest.param("spark", "spark", marks=LONG), ("auto", "direct")])
def test_debezium_changes_make_the_source_table_and_a_replayed_batch_changes_nothing(kafka, spark, producer,
                                                                                     topic_name, tmp_path, asked,
                                                                                     writer):
    kafka.create_topic(topic_name, partitions=1)
    table = str(tmp_path / "customers")
    source = SourceTable(producer, topic_name, with_schema=True)
    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": i + 0.5} for i in range(1, 7)])
    source.insert({"id": 7, "name": "seven", "qty": 7, "price": 7.25})
    source.update(2, name="two", qty=20)
    source.update(2, price=2.75)  # two changes of one key in one batch: the last wins
    source.delete(3)
    source.change_key(4, 40)  # a primary-key change moves the row
    source.flush()
    first = load(spark, _options(kafka, topic_name, table, cdc_metadata=True, writer=asked))
    assert (first.status, first.writer, first.writer_reason) == ("committed", writer, None)
    assert table_state(spark, table, source.columns) == source.expected()

    source.add_column("email")  # a column added at the source appears in the table
    source.update(1, email="one@example.com")
    lsn_of_1 = source.lsn
    source.insert({"id": 8, "name": "eight", "qty": 8, "price": 8.0, "email": "8@example.com"})
    source.delete(7)
    source.insert({"id": 3, "name": "three again", "qty": 3, "price": 3.0})  # a deleted key comes back
    source.update(5, name=None)  # a value set to null
    source.flush()
    second = load(spark, _options(kafka, topic_name, table, cdc_metadata=True, writer=asked))
    assert second.batch == first.batch + 1 and second.writer == writer
    assert table_state(spark, table, source.columns) == source.expected()
    meta = spark.read.format("delta").load(table).where("id = 1").select("__op", "__lsn").first()
    assert meta["__op"] == "u" and meta["__lsn"] == lsn_of_1  # the row's last change's position

    # An older change sent again after newer ones (Debezium restarting from an older position) changes nothing:
    # the row's own position is newer.
    source.resend(1, {"id": 1, "name": "stale", "qty": -1, "price": -1.0}, lsn_of_1 - 4)
    source.update(8, qty=88)  # while a change of the same batch that is newer than its row applies
    source.flush()
    stale = load(spark, _options(kafka, topic_name, table, cdc_metadata=True, writer=asked))
    assert stale.status == "committed" and stale.rows == 2
    assert table_state(spark, table, source.columns) == source.expected()
    second = stale

    # The Delta log, read independently: the MERGE's commit holds the sink's txn and the batch's record.
    dt = DeltaTable(table)
    assert dt.transaction_version("kafka-spark/default") == second.batch
    latest = dt.history(1)[0]
    assert latest["operation"] == "MERGE"
    assert json.loads(latest["userMetadata"])["batch"] == second.batch
    assert committed_position(table, "default").batch == second.batch

    # A re-run of the committed batch (another run's) is skipped by Delta, detected, and changes nothing.
    version = dt.version()
    replay = SinkCommit(sink_id="default", batch=second.batch, offsets=dict(second.offsets),
                        start_offsets=dict(second.start), run_id="replayed")
    opts = _options(kafka, topic_name, table, cdc_metadata=True)
    records = spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .option("subscribe", topic_name).load()
    with pytest.raises(BatchAlreadyCommittedError):
        merge_commit(spark, opts.target, opts.format, opts.parsing, opts.changes, records, replay, "replay",
                     direct=writer == "direct")
    assert DeltaTable(table).version() == version
    assert table_state(spark, table, source.columns) == source.expected()

    # A truncate empties the table; the changes after it remain.
    source.update(6, qty=66)
    source.truncate()
    source.insert({"id": 9, "name": "nine", "qty": 9, "price": 9.0, "email": None})
    source.flush()
    load(spark, _options(kafka, topic_name, table, writer=asked))
    assert table_state(spark, table, source.columns) == source.expected() == [
        {"id": 9, "name": "nine", "qty": 9, "price": 9.0, "email": None}]
    assert load(spark, _options(kafka, topic_name, table, writer=asked)).status == "up-to-date"


def test_routed_topics_without_schema_then_a_stream_continues(kafka, spark, producer, topic_name, tmp_path):
    from kafka_spark.delta import start_stream
    from kafka_spark.sink import StreamOptions

    topics = [f"{topic_name}-a", f"{topic_name}-b"]
    sources = {}
    for i, topic in enumerate(topics):
        kafka.create_topic(topic, partitions=2)
        sources[topic] = SourceTable(producer, topic, with_schema=False, table=f"t{i}")
        sources[topic].snapshot([{"id": n, "name": f"{topic}-{n}", "qty": n, "price": 1.5} for n in range(1, 9)])
        sources[topic].update(1 + i, qty=100)
        sources[topic].delete(5)
        sources[topic].change_key(6, 60 + i)
        sources[topic].flush()
    routing = Routing(template=str(tmp_path / "lake" / "{topic}"))
    result = load_tables(spark, LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics,
                                            routing=routing, cdc="debezium"))
    assert [t.status for t in result.tables] == ["committed", "committed"]
    for topic, source in sources.items():
        assert table_state(spark, str(tmp_path / "lake" / topic), source.columns) == source.expected(), topic

    for source in sources.values():
        source.update(2, name="streamed")
        source.delete(1)
        source.insert({"id": 20, "name": "new", "qty": 20, "price": 0.25})
        source.flush()
    query = start_stream(spark, StreamOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics,
                                              routing=routing, cdc="debezium", trigger="available-now"))
    query.awaitTermination(180)
    assert query.exception() is None
    for topic, source in sources.items():
        assert table_state(spark, str(tmp_path / "lake" / topic), source.columns) == source.expected(), topic


@pytest.mark.parametrize("asked", ["spark", "auto"])
def test_soft_deletes_mark_rows_and_a_truncate_marks_every_row(kafka, spark, producer, topic_name, tmp_path, asked):
    kafka.create_topic(topic_name, partitions=1)
    table = str(tmp_path / "customers")
    source = SourceTable(producer, topic_name, with_schema=False)
    opts = _options(kafka, topic_name, table, cdc_soft_delete=True, cdc_metadata=True, writer=asked)

    def state() -> dict[int, tuple]:
        rows = spark.read.format("delta").load(table).collect()
        return {r["id"]: (r["name"], r["__deleted"], r["__op"]) for r in rows}

    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": 1.0} for i in range(1, 6)])
    source.flush()
    load(spark, opts)
    assert state() == {i: (f"n{i}", False, "r") for i in range(1, 6)}

    source.delete(2)
    source.update(3, name="three")
    source.change_key(4, 40)
    source.flush()
    load(spark, opts)
    # The deleted rows keep their last values, marked; the moved key's old row is marked, its new one live.
    assert state() == {1: ("n1", False, "r"), 2: ("n2", True, "d"), 3: ("three", False, "u"), 4: ("n4", True, "d"),
                       5: ("n5", False, "r"), 40: ("n4", False, "c")}

    source.insert({"id": 2, "name": "two again", "qty": 2, "price": 2.0})  # live again...
    source.flush()
    load(spark, opts)
    assert state()[2] == ("two again", False, "c")
    source.truncate()  # ...until the truncate marks every row
    source.insert({"id": 9, "name": "nine", "qty": 9, "price": 9.0})  # a row inserted after it stays live
    source.flush()
    load(spark, opts)
    got = state()
    assert {k for k, (_, deleted, _) in got.items() if not deleted} == {9}
    assert set(got) == {1, 2, 3, 4, 5, 9, 40} and got[3] == ("three", True, "u")


def test_upsert_mode_on_a_keyed_topic_with_tombstones_and_bad_records(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=2)
    table = str(tmp_path / "users")
    state: dict[str, dict] = {}

    def put(user: str, value: dict | None) -> None:
        producer.send(topic_name, None if value is None else json.dumps(value).encode(), key=user.encode())
        if value is None:
            state.pop(user, None)
        else:
            state[user] = value

    for n in range(10):
        put(f"user-{n}", {"score": n, "team": "a" if n % 2 else "b"})
    put("user-3", {"score": 33, "team": "c"})
    put("user-4", None)  # a tombstone deletes the key
    put("user-11", None)  # a tombstone of a key the table never had
    producer.flush()
    opts = LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                       cdc="upsert", key_columns=["user"])
    first = load(spark, opts)
    rows = spark.read.format("delta").load(table).collect()
    assert {r["user"]: {"score": r["score"], "team": r["team"]} for r in rows} == state
    # How old the changes were at the commit: in the result and in the commit's metadata (delta-offsets).
    fresh = first.freshness
    assert fresh is not None and 0 <= fresh.p50_ms <= fresh.p99_ms <= fresh.max_ms < 600_000
    recorded = json.loads(DeltaTable(table).history(1)[0]["userMetadata"])
    assert recorded["freshness_ms"] == fresh.summary()

    # A record without a key (no record key, no "user" field) fails the batch, naming it, with either engine's
    # MERGE; nothing of the batch is committed.
    before = DeltaTable(table).version()
    put("user-7", {"score": 77, "team": "a"})
    producer.send(topic_name, json.dumps({"score": 7}).encode(), partition=1)
    producer.flush()
    for writer in ("auto", "spark"):
        with pytest.raises(ChangeEventError, match=rf"'{topic_name}' \[1\] offset \d+: no value for the key "
                                                   r"column\(s\) user; nothing of this batch was committed") as caught:
            load(spark, dataclasses.replace(opts, writer=writer))
        ends = {tp.partition: end for tp, end in latest_offsets_of(kafka.bootstrap, topic_name).items()}
        assert caught.value.partition == 1 and caught.value.offset == ends[1] - 1
        assert DeltaTable(table).version() == before

    # A value that is not an object fails the batch, naming the record; nothing of it is committed.
    put("user-5", {"score": 55, "team": "z"})
    producer.send(topic_name, b"[1, 2]", key=b"user-6", partition=0)
    producer.flush()
    with pytest.raises(ChangeEventError, match=rf"{topic_name}.*offset .*not a JSON object") as caught:
        load(spark, opts)
    assert caught.value.topic == topic_name and caught.value.partition == 0
    assert DeltaTable(table).version() == before


def test_cdc_options_are_checked():
    with pytest.raises(ConfigError, match="cdc 'maxwell'"):
        LoadOptions(table="/t", topics=["t"], cdc="maxwell")
    with pytest.raises(ConfigError, match="give cdc"):
        LoadOptions(table="/t", topics=["t"], key_columns=["id"])
    with pytest.raises(ConfigError, match="transform"):
        LoadOptions(table="/t", topics=["t"], cdc="debezium", transform="SELECT * FROM batch")
    # change events need no value_schema for a dead-letter table: they are bad by their envelope
    assert LoadOptions(table="/t", topics=["t"], cdc="upsert", dead_letter="/d").parsing.changes


# The suite's CDC kills are the end-to-end test's (tests/integration/cdc: after a commit, then at random, both
# writers); this one, on hand-made events, runs in the long schedule.
@pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2,
                    reason="long schedule: KAFKA_SPARK_KILLS=10 (the suite's CDC kills are tests/integration/cdc's)")
def test_sigkill_around_and_during_the_merge_then_a_rerun_reaches_the_source_table(kafka, spark, producer,
                                                                                    topic_name, tmp_path):
    import random
    from pathlib import Path

    from delta_support import latest_offsets_of, run_killable

    script = Path(__file__).parent / "cdc_load_once.py"
    kafka.create_topic(topic_name, partitions=2)
    table = str(tmp_path / "orders")
    source = SourceTable(producer, topic_name, with_schema=True)
    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": 1.0} for i in range(1, 31)])
    source.flush()
    options = _options(kafka, topic_name, table, sink_id="cdc-crash-test", cdc_metadata=True)
    load(spark, options)  # the table's first commit, in this process (as the re-run at the end)
    rng = random.Random(50)
    # Killed right after the MERGE's commit (its offsets not yet kept beside the table), then at a random moment
    # of a run (planning, reading or merging), each time with more changes waiting.
    for crash_at, kill_after in (("after-commit", None), (None, rng.uniform(1.0, 5.0))):
        for i in sorted(source.rows)[::3]:
            source.update(i, qty=rng.randrange(1000))
        source.delete(rng.choice(sorted(source.rows)))
        source.change_key(sorted(source.rows)[0], 100 + len(source.rows))
        source.flush()
        code, out = run_killable(script, kafka.bootstrap, topic_name, table, crash_at=crash_at,
                                 kill_after=kill_after, ready="session")
        assert code in (-9, 0), out
    # the re-run resumes from the table alone (up to date when the last killed run finished its batch first)
    assert load(spark, options).status in ("committed", "up-to-date")
    assert table_state(spark, table, source.columns) == source.expected()
    position = committed_position(table, "cdc-crash-test")
    assert DeltaTable(table).transaction_version("kafka-spark/cdc-crash-test") == position.batch
    assert position.offsets == latest_offsets_of(kafka.bootstrap, topic_name)


class MySqlSourceTable(SourceTable):
    """Change events as Debezium's MySQL connector writes them: the position is the binlog file, the offset in it
    and the row in its event; the file rolls over (the offset starts again) after `roll_at`."""

    roll_at: int = 1060

    def _source(self, snapshot: bool) -> dict:
        self.lsn += 8
        file, pos = (4, self.lsn - self.roll_at) if self.lsn >= self.roll_at else (3, self.lsn)
        return {"version": "3.6.1.Final", "connector": "mysql", "name": "dbserver1",
                "ts_ms": 1_700_000_000_000 + self.lsn, "snapshot": "true" if snapshot else "false", "db": "inventory",
                "table": self.table, "server_id": 223344, "gtid": None, "file": f"mysql-bin.{file:06d}", "pos": pos,
                "row": 0, "thread": 7, "query": None}


# delta-rs's MERGE (the default): a batch whose only change its guard turns away still commits its position (Spark's
# MERGE commits one that changes nothing by itself)
def test_mysql_binlog_positions_guard_replays_across_a_file_rollover(kafka, spark, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=1)
    table = str(tmp_path / "mysql_customers")
    source = MySqlSourceTable(producer, topic_name, with_schema=False)
    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": 1.0} for i in range(1, 4)])
    source.flush()
    load(spark, _options(kafka, topic_name, table, cdc_metadata=True))
    while source.lsn < source.roll_at:  # into the next binlog file: its offsets are smaller than the last file's
        source.update(1, qty=source.lsn)
    source.update(2, name="two")  # in file 4 at a small offset
    source.flush()
    load(spark, _options(kafka, topic_name, table, cdc_metadata=True))
    # sent again from file 3 at a larger offset (just after its snapshot row's): older than the row all the same
    source.resend(2, {"id": 2, "name": "stale", "qty": -1, "price": -1.0}, 1024)
    source.flush()
    assert load(spark, _options(kafka, topic_name, table, cdc_metadata=True)).status == "committed"
    assert table_state(spark, table, source.columns) == source.expected()
    row = spark.read.format("delta").load(table).where("id = 2").select("__lsn").first()
    assert row["__lsn"] == 4 * 2**40 + (source.lsn - source.roll_at) * 256  # file 4, its offset, row 0

"""Compaction of Iceberg tables: small files rewritten in one "replace" snapshot that keeps every row once and every
sink's position, loads and streams resuming on top of it, and compactions racing appends, deletes and each other
losing and duplicating nothing."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from iceberg_support import every_offset_once, new_topic, produce, scanned

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import committed_positions, compaction, load, start_stream
from kafka_spark.iceberg.batch_append import append_batch, create_table
from kafka_spark.iceberg.compaction import (
    CompactionError,
    commit_rewrite,
    compact_iceberg_table,
    plan_rewrite,
    rewrite_files,
)
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink import LoadOptions, SinkCommit, StreamOptions


def live_files(location: IcebergLocation) -> list[str]:
    return location.load().inspect.files().column("file_path").to_pylist()


def last_snapshot(location: IcebergLocation) -> tuple[str, dict[str, str]]:
    """The operation and summary properties of the table's current snapshot."""
    snapshot = location.load().current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return snapshot.summary.operation.value, dict(snapshot.summary.additional_properties)


def produce_evenly(producer, topic: str, n: int, start: int = 0) -> None:
    """`n` records over the topic's two partitions in turn."""
    for i in range(start, start + n):
        producer.send(topic, f'{{"n":{i}}}'.encode(), partition=i % 2)
    producer.flush()


def test_loads_compacted_keep_rows_and_positions_and_the_next_load_resumes(kafka, spark, producer, catalog):
    topics = [new_topic(kafka, partitions=2) for _ in range(2)]
    produce_evenly(producer, topics[0], 32)
    produce_evenly(producer, topics[1], 8)
    # Two sinks of one table (a topic each); each batch is a file per Kafka partition.
    opts = [LoadOptions(table="db.events", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                        sink_id=f"sink-{i}", max_records=8, partition_by=["partition"])
            for i, topic in enumerate(topics)]
    for _ in range(3):
        assert load(spark, opts[0], catalog).rows == 8
    assert load(spark, opts[1], catalog).rows == 8
    location = IcebergLocation(catalog, ("db", "events"))
    before_files, before_rows = live_files(location), scanned(catalog, "db.events")
    positions = committed_positions("db.events", catalog)
    assert len(before_files) == 8 and len(before_rows) == 32

    planned = compact_iceberg_table("db.events", catalog, dry_run=True)
    assert (planned.dry_run, planned.removed, planned.files_after) == (True, 8, 2)
    assert len(live_files(location)) == 8  # a dry run commits nothing

    done = compact_iceberg_table("db.events", catalog)
    assert (done.files_before, done.removed, done.added, done.files_after, done.error) == (8, 8, 2, 2, None)
    after_files = live_files(location)
    assert len(after_files) == 2 and not set(after_files) & set(before_files)
    assert scanned(catalog, "db.events") == before_rows
    operation, summary = last_snapshot(location)
    assert operation == "replace" and not [k for k in summary if k.startswith("kafka-spark.")], summary
    assert (summary["total-records"], summary["deleted-data-files"], summary["added-data-files"]) == ("32", "8", "2")
    assert committed_positions("db.events", catalog) == positions
    assert compact_iceberg_table(location).removed == 0  # one file per partition: nothing left to pair

    # Each sink goes on from its own position behind the compaction: no gap, no duplicate.
    produce_evenly(producer, topics[1], 6, start=8)
    first = load(spark, opts[0], catalog)
    second = load(spark, dataclasses.replace(opts[1], max_records=None), catalog)
    assert (first.batch, first.rows, first.start) == (3, 8, positions["sink-0"].offsets)
    assert (second.batch, second.rows, second.start) == (1, 6, positions["sink-1"].offsets)
    ends = {**first.offsets, **second.offsets}
    assert ends == {TopicPartition(topics[0], 0): 16, TopicPartition(topics[0], 1): 16,
                    TopicPartition(topics[1], 0): 7, TopicPartition(topics[1], 1): 7}
    every_offset_once(catalog, "db.events", ends)


def test_a_stream_with_compact_every_compacts_its_table(kafka, spark, producer, catalog):
    topic = new_topic(kafka, partitions=1)
    produce(producer, topic, 30)
    compactions = []

    def on_commit(_batch_id: int, result) -> None:
        if result.compaction is not None:
            compactions.append(result.compaction)

    opts = StreamOptions(table="db.streamed", kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic],
                         trigger="available-now", max_offsets_per_trigger=5, compact_every=3, on_commit=on_commit)
    with pytest.raises(ConfigError, match="vacuum_retention_hours: Iceberg tables are not vacuumed"):
        start_stream(spark, dataclasses.replace(opts, vacuum_retention_hours=1), catalog)
    query = start_stream(spark, opts, catalog)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    # 6 micro-batches of 5 records: compacted after the 3rd (3 files into 1) and the 6th (1 + 3 into 1)
    assert [(c.removed, c.added, c.files_after, c.error) for c in compactions] == [(3, 1, 1, None), (4, 1, 1, None)]
    location = IcebergLocation(catalog, ("db", "streamed"))
    assert len(live_files(location)) == 1
    operations = [s.summary.operation.value for s in location.load().snapshots() if s.summary is not None]
    assert operations == ["append"] * 3 + ["replace"] + ["append"] * 3 + ["replace"]
    every_offset_once(catalog, "db.streamed", {TopicPartition(topic, 0): 30})
    assert committed_positions("db.streamed", catalog)["default"].offsets == {TopicPartition(topic, 0): 30}


# ---- races, through pyiceberg alone ----------------------------------------------------------------------------

def rows(topic: str, start: int, n: int) -> pa.Table:
    return pa.table({"topic": pa.array([topic] * n, pa.string()), "partition": pa.array([0] * n, pa.int32()),
                     "offset": pa.array(range(start, start + n), pa.int64())})


def appended(location: IcebergLocation, sink: str, topic: str, batches: range, size: int = 5, start: int = 0
             ) -> None:
    """The sink's `batches`, `size` records each from offset `start` on, appended as its commits."""
    for i, batch in enumerate(batches):
        end = start + size * (i + 1)
        append_batch(location, rows(topic, end - size, size),
                     SinkCommit(sink, batch, {TopicPartition(topic, 0): end}, run_id=f"run-{sink}"))


def offsets(location: IcebergLocation) -> list[tuple[str, int]]:
    return sorted((r["topic"], r["offset"]) for r in location.load().scan().to_arrow().to_pylist())


def compaction_files(location: IcebergLocation) -> tuple[set[str], set[str]]:
    """The compactions' data files under the table, and those any snapshot of the table names."""
    table = location.load()
    named = {e.data_file.file_path for s in table.snapshots() for m in s.manifests(table.io)
             for e in m.fetch_manifest_entry(table.io, discard_deleted=False)}
    root = table.location().removeprefix("file://")
    on_disk = {str(p) for p in Path(root, "data").rglob("compact-*.parquet")}
    return on_disk, {p.removeprefix("file://") for p in named}


@pytest.fixture
def small_table(catalog) -> IcebergLocation:
    """A table of one sink's 4 batches of 5 records (offsets 0-19 of topic t), a file each."""
    location = IcebergLocation(catalog, ("db", "raced"))
    create_table(location, rows("t", 0, 0).schema)
    appended(location, "s", "t", range(4))
    return location


def test_an_append_between_a_compactions_plan_and_its_commit_is_kept(small_table, catalog):
    location = small_table
    plan = plan_rewrite(location)
    added = rewrite_files(plan)
    assert (len(plan.removed), len(added)) == (4, 1)
    appended(location, "s", "t", range(4, 5), start=20)  # other writers' commits land first
    appended(location, "other", "u", range(1))
    newest = set(live_files(location)) - {f.file_path for f in plan.removed}
    assert len(newest) == 2
    commit_rewrite(plan, added)
    assert set(live_files(location)) == newest | {f.file_path for f in added}
    assert offsets(location) == [("t", o) for o in range(25)] + [("u", o) for o in range(5)]
    assert last_snapshot(location)[0] == "replace"
    positions = committed_positions("db.raced", catalog)
    assert {s: (p.batch, p.offsets) for s, p in positions.items()} == {
        "s": (4, {TopicPartition("t", 0): 25}), "other": (0, {TopicPartition("u", 0): 5})}
    # the sink's next batch commits on top of the compaction
    appended(location, "s", "t", range(5, 6), start=25)
    assert offsets(location) == [("t", o) for o in range(30)] + [("u", o) for o in range(5)]


def test_an_append_that_wins_the_catalogs_race_is_kept(small_table, monkeypatch):
    location = small_table
    raced: list[int] = []

    def append_once(name: str) -> None:
        # Between the compaction's snapshot being staged and its catalog commit: that commit fails, and the
        # compaction checks its files again and commits on the append's snapshot.
        if name == "compact-staged" and not raced:
            appended(location, "s", "t", range(4, 5), start=20)
            raced.append(location.load().current_snapshot().snapshot_id)

    monkeypatch.setattr(compaction, "crash_point", append_once)
    done = compact_iceberg_table(location)
    assert (done.removed, done.added, done.files_after) == (4, 1, 2)
    snapshot = location.load().current_snapshot()
    assert snapshot.summary.operation.value == "replace" and snapshot.parent_snapshot_id == raced[0]
    assert offsets(location) == [("t", o) for o in range(25)]


def test_a_compaction_whose_files_another_writer_removed_commits_nothing(small_table, monkeypatch):
    location = small_table
    late = plan_rewrite(location)
    late_files = rewrite_files(late)
    assert compact_iceberg_table(location).removed == 4  # another compaction rewrote the same files first
    snapshots = len(location.load().snapshots())
    with pytest.raises(CompactionError, match="another writer removed 4 of the files"):
        commit_rewrite(late, late_files)
    assert len(location.load().snapshots()) == snapshots
    assert offsets(location) == [("t", o) for o in range(20)]
    for file in late_files:  # what compact_iceberg_table does after a failed commit
        location.load().io.delete(file.file_path)

    # Rows of a planned file deleted (pyiceberg rewrites the file) after the compaction wrote its files: it fails
    # rather than bring the row back, and deletes the files it wrote.
    appended(location, "s", "t", range(4, 7), start=20)

    def delete_a_row(name: str) -> None:
        if name == "compact-before-commit":
            location.load().delete("offset = 22")

    monkeypatch.setattr(compaction, "crash_point", delete_a_row)
    with pytest.raises(CompactionError, match="another writer removed 1 of the files it rewrites"):
        compact_iceberg_table(location)
    assert offsets(location) == [("t", o) for o in range(35) if o != 22]
    on_disk, named = compaction_files(location)
    assert len(on_disk) == 1 and on_disk <= named  # the first compaction's file only

    # A new partition spec (which makes no snapshot) after the plan: the new files would be of the old one.
    monkeypatch.undo()
    plan = plan_rewrite(location)
    planned_files = rewrite_files(plan)
    with location.load().update_spec() as spec:
        spec.add_identity("topic")
    with pytest.raises(CompactionError, match="partition spec changed"):
        commit_rewrite(plan, planned_files)
    assert offsets(location) == [("t", o) for o in range(35) if o != 22]


def test_compactions_racing_appends_lose_and_duplicate_nothing(small_table, catalog):
    location = small_table
    errors: list[BaseException] = []
    done = threading.Event()

    def append() -> None:
        try:
            appended(location, "s", "t", range(4, 16), size=2, start=20)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=append)
    writer.start()
    compacted = 0
    while not done.is_set():
        removed = compact_iceberg_table(location).removed  # no other compaction: each one commits
        compacted += removed
        if not removed:
            time.sleep(0.02)  # one file left: wait for the next append
    writer.join()
    assert errors == []
    assert compacted > 0
    seen = offsets(location)
    assert not [r for r, n in Counter(seen).items() if n > 1]
    assert seen == [("t", o) for o in range(44)]
    assert committed_positions("db.raced", catalog)["s"].batch == 15
    assert compact_iceberg_table(location).files_after == 1

"""Small files: a 1-second stream that compacts as it goes keeps its table to a few files with every offset in it
once, while a delta-rs reader reads it; a SIGKILL in a stream's compaction loses and duplicates nothing; the
optimize and vacuum commands serve a table per topic, and both writers commit on top of their commits."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

import pytest
from delta_support import (
    STREAM_KILLS,
    STREAM_SINK_ID,
    delta_rs_rows,
    keep_producing,
    latest_offsets_of,
    produce_numbered,
    run_available_now,
    run_stream_once,
    spark_rows,
)
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from stream_once import COMPACT_ENV

from kafka_spark.cli.main import main
from kafka_spark.client.cluster import Cluster
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.client.topics import NewTopic, create_topics
from kafka_spark.delta import committed_position, load_tables, start_stream
from kafka_spark.sink import LoadOptions, Routing, StreamOptions
from kafka_spark.sink.crash import CRASH_ENV

SINK = "compacted"


def assert_exact(table: Path, topic: str, ends: dict[TopicPartition, int]) -> None:
    """Every offset produced is in the table once, read by delta-rs."""
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["topic", "partition", "offset"]).to_pylist()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)), "a record was written twice"
    assert set(keys) == {(topic, tp.partition, o) for tp, end in ends.items() for o in range(end)}


def data_files_written(table: Path) -> int:
    """The files the sink's commits added (those of compactions, `dataChange=false`, left out)."""
    import json

    adds = [json.loads(line)["add"] for f in sorted((table / "_delta_log").glob("*.json"))
            for line in f.read_text().splitlines() if line.startswith('{"add"')]
    return sum(1 for a in adds if a["dataChange"])


@contextmanager
def reading(table: Path) -> Iterator[list[int]]:
    """A delta-rs reader reading the table over and over while the block runs: every snapshot it reads must hold
    each partition's offsets from 0 with no gap and no repeat. Yields the versions it read."""
    versions: list[int] = []
    errors: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                dt = DeltaTable(str(table))
            except TableNotFoundError:
                time.sleep(0.05)
                continue
            rows = dt.to_pyarrow_table(columns=["partition", "offset"]).to_pylist()
            by_partition: dict[int, list[int]] = {}
            for r in rows:
                by_partition.setdefault(r["partition"], []).append(r["offset"])
            for partition, offsets in by_partition.items():
                if sorted(offsets) != list(range(len(offsets))):
                    errors.append(f"version {dt.version()} partition {partition}: {len(offsets)} rows, "
                                  f"{len(set(offsets))} distinct, max {max(offsets)}")
            versions.append(dt.version())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield versions
    finally:
        stop.set()
        reader.join(30)
    assert errors == []


def test_a_one_second_stream_compacting_as_it_goes_keeps_few_files_and_every_offset_once(
        spark, kafka, producer, topic_name, tmp_path):
    kafka.create_topic(topic_name, partitions=3)
    table = tmp_path / "table"
    every, batches = 3, 9
    # After each micro-batch (its compaction included): one file per partition per micro-batch since the last
    # compaction, and the compacted one.
    bound = 3 * (every - 1) + 1
    files: list[int] = []
    compactions = []

    def on_commit(_batch_id: int, result) -> None:
        files.append(len(DeltaTable(str(table)).file_uris()))
        if result.compaction is not None:
            compactions.append(result.compaction)

    opts = StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                         sink_id=SINK, trigger="1s", compact_every=every, on_commit=on_commit)
    with reading(table) as versions, keep_producing(producer, topic_name, start=0, step=21):
        query = start_stream(spark, opts)
        try:
            deadline = time.monotonic() + 120
            while len(files) < batches and query.isActive and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            query.stop()
    assert len(files) >= batches, query.exception()
    assert max(files) <= bound, files
    assert len(compactions) >= batches // every - 1 and all(c.error is None for c in compactions), compactions
    assert all(c.removed > 1 and c.files_after < c.files_before for c in compactions)
    assert len(set(versions)) > 3  # the reader read while the stream committed and compacted
    written = data_files_written(table)
    print(f"\n1s trigger, compact_every={every}: {len(files)} micro-batches wrote {written} files; active files "
          f"after each: {files}; the reader read {len(versions)} snapshots of {len(set(versions))} versions")

    # The stream resumes with Spark's writer on top of the compactions: from the checkpoint, then from the table.
    produce_numbered(producer, topic_name, 60, start=1_000_000)
    resumed = dataclasses.replace(opts, trigger="available-now", writer="spark", on_commit=None)
    assert run_available_now(spark, resumed) > 0
    shutil.rmtree(resumed.checkpoint_location)
    produce_numbered(producer, topic_name, 30, start=2_000_000)
    assert run_available_now(spark, dataclasses.replace(resumed, writer="direct")) == 30
    ends = latest_offsets_of(kafka.bootstrap, topic_name)
    assert_exact(table, topic_name, ends)
    assert committed_position(str(table), SINK).offsets == ends


# Where the stream is killed: with the compacted files written but not committed; in the long schedule
# (KAFKA_SPARK_KILLS above 2) also right after the compaction's commit.
COMPACTION_KILLS = ["compact-before-commit", "after-compact"][:1 + (STREAM_KILLS > 2)]


@pytest.mark.parametrize("crash_at", COMPACTION_KILLS)
def test_a_sigkill_in_a_streams_compaction_loses_and_duplicates_nothing(
        spark, kafka, producer, topic_name, tmp_path, monkeypatch, crash_at):
    kafka.create_topic(topic_name, partitions=2)
    produce_numbered(producer, topic_name, 300)
    table = tmp_path / "table"
    monkeypatch.setenv(COMPACT_ENV, "2")
    # Killed in the compaction after the second micro-batch's commit, before Spark's commit log records that
    # micro-batch, while a delta-rs reader reads the table.
    with reading(table) as versions:
        code = run_stream_once(kafka.bootstrap, topic_name, table, "available-now", 0, limit=50, writer="direct",
                               crash_at=crash_at, armed_after=1)
    assert code == -9
    killed_at = committed_position(str(table), STREAM_SINK_ID)
    assert killed_at is not None and killed_at.batch == 1
    logged = {unquote(p) for p in DeltaTable(str(table)).get_add_actions(flatten=True).column("path").to_pylist()}
    stray = [p.name for p in table.glob("*.zstd.parquet") if p.name not in logged]
    compacted = DeltaTable(str(table)).history(1)[0].get("kafkaSparkCompaction") is True
    # Killed before the commit: its file is in no commit. After it: the newest commit is the compaction's.
    assert (len(stray), compacted) == ((1, False) if crash_at == "compact-before-commit" else (0, True))
    commits = table / "_kafka_spark" / "checkpoints" / STREAM_SINK_ID / "commits"
    assert sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) == [0]  # micro-batch 1 is replayed
    # The restarted stream (in this process, on the same checkpoint) replays micro-batch 1 without writing it
    # again, and goes on, compacting as it goes.
    monkeypatch.delenv(CRASH_ENV, raising=False)
    opts = StreamOptions(table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                         sink_id=STREAM_SINK_ID, writer="direct", compact_every=1)
    done: list = []
    opts.on_commit = lambda _batch_id, result: done.append(result)
    assert run_available_now(spark, opts) == 300 - sum(killed_at.offsets.values())
    assert [r.batch for r in done] == [2] and done[0].compaction is not None and done[0].compaction.removed >= 2
    assert_exact(table, topic_name, latest_offsets_of(kafka.bootstrap, topic_name))
    assert len(versions) > 0
    # What the killed compaction left, a file in no commit, goes with a full vacuum; the rows stay.
    assert main(["vacuum", "--table", str(table), "--full", "--retention-hours", "0", "--no-retention-check"]) == 0
    assert not any((table / name).exists() for name in stray)
    assert_exact(table, topic_name, latest_offsets_of(kafka.bootstrap, topic_name))


def test_optimize_and_vacuum_commands_on_a_table_per_topic(spark, kafka, producer, topic_name, tmp_path, capsys):
    import json

    topics = [f"{topic_name}-a", f"{topic_name}-b"]
    with Cluster({"bootstrap.servers": kafka.bootstrap}) as cluster:
        create_topics(cluster, [NewTopic(t, 2) for t in topics])
    root = tmp_path / "bronze"
    template = f"{root}/{{topic}}"
    opts = LoadOptions(kafka={"bootstrap.servers": kafka.bootstrap}, topics=topics, sink_id=SINK,
                       routing=Routing(template=template))

    def load(writer: str, count: int) -> None:
        for t in topics:
            produce_numbered(producer, t, count, start=10_000 * len(latest_offsets_of(kafka.bootstrap, t)))
        result = load_tables(spark, dataclasses.replace(opts, writer=writer))
        assert result.status == "committed", result.summary()

    load("direct", 10)
    load("spark", 10)
    assert main(["optimize", "--table-template", template, "--pattern", f"^{topic_name}-", "-b", kafka.bootstrap,
                 "--json"]) == 0
    compacted = json.loads(capsys.readouterr().out)["tables"]
    assert [t["table"] for t in compacted] == [f"{root}/{t}" for t in topics]
    assert all(t["removed"] >= 2 and t["files_after"] == 1 for t in compacted), compacted
    # Both writers commit on top of the compactions, and the sinks continue where they were.
    load("spark", 5)
    load("direct", 5)
    assert main(["optimize", "--root", str(root), "--dry-run"]) == 0
    assert "would compact" in capsys.readouterr().out
    assert main(["vacuum", "--root", str(root), "--retention-hours", "0", "--no-retention-check", "--json"]) == 0
    vacuumed = json.loads(capsys.readouterr().out)["tables"]
    assert [t["files"] >= 2 for t in vacuumed] == [True, True], vacuumed
    for t in topics:
        assert_exact(root / t, t, latest_offsets_of(kafka.bootstrap, t))
        assert committed_position(str(root / t), SINK).batch == 3
        # Delta on Spark reads the compacted files as delta-rs does.
        assert spark_rows(spark, root / t) == delta_rs_rows(root / t)

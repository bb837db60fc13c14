"""Compaction and vacuum of a sink's Delta table (delta-rs, no Spark): commits that change no data leave every
position where it is, the direct writer commits on top of them from a stale snapshot, vacuum keeps the sink's
own files, and the options, flags and commands that ask for them refuse what they cannot do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from kafka_spark.cli.main import main
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.compaction import DEFAULT_TARGET_SIZE, compact_table, open_table, tables_under, vacuum_table
from kafka_spark.delta.direct_commit import DirectJob, finish_job
from kafka_spark.delta.errors import NoTableError
from kafka_spark.delta.location import path_location
from kafka_spark.delta.position import committed_position, write_pending
from kafka_spark.delta.rewrite import FileAccess, commit_rewrite, plan_bins, write_bin
from kafka_spark.delta.writer_choice import DirectTarget
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.sink.errors import ConcurrentWriterError
from kafka_spark.sink.position import SinkCommit, app_id

TP = TopicPartition("t", 0)
SCHEMA = pa.schema([pa.field("partition", pa.int32()), pa.field("offset", pa.int64())])


def batch_commit(batch: int, size: int = 10) -> SinkCommit:
    return SinkCommit(sink_id="s", batch=batch, offsets={TP: size * (batch + 1)}, start_offsets={TP: size * batch},
                      run_id=f"run-{batch}")


def rows(batch: int, size: int = 10) -> pa.Table:
    return pa.table({"partition": pa.array([0] * size, pa.int32()),
                     "offset": pa.array(range(size * batch, size * (batch + 1)), pa.int64())}, schema=SCHEMA)


def commit_batch(table: Path, batch: int, keep: bool = True) -> None:
    """A batch as the sink commits it: its rows, the sink's `txn` and the batch's JSON as userMetadata; the kept
    offsets beside the table unless `keep` is False (as after a crash between the commit and keeping them)."""
    commit = batch_commit(batch)
    write_pending(table, commit)
    write_deltalake(table, rows(batch), mode="append", commit_properties=CommitProperties(
        app_transactions=[Transaction(app_id("s"), batch)], custom_metadata={"userMetadata": commit.to_json()}))
    if keep:
        (table / "_kafka_spark" / "offsets" / "s" / f"{batch}.json").write_text(commit.to_json())


def offsets(table: Path) -> list[int]:
    return sorted(DeltaTable(str(table)).to_pyarrow_table(columns=["offset"]).column("offset").to_pylist())


def log_actions(table: Path, version: int) -> list[dict]:
    return [json.loads(line) for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def test_a_compaction_rewrites_files_without_changing_data_or_offsets(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(6):
        commit_batch(table, batch)
    done = compact_table(table)
    assert (done.files_before, done.files_after, done.removed, done.added) == (6, 1, 6, 1)
    assert done.table_version == 6 and done.error is None
    actions = log_actions(table, 6)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["kafkaSparkCompaction"] is True and info["isBlindAppend"] is False and "userMetadata" not in info
    assert not any("txn" in a for a in actions)
    changes = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(changes) == 7 and all(c["dataChange"] is False for c in changes)
    assert offsets(table) == list(range(60))
    assert DeltaTable(str(table)).transaction_version(app_id("s")) == 5
    assert committed_position(table, "s") == batch_commit(5)
    # Nothing left to rewrite: no commit.
    again = compact_table(table)
    assert (again.removed, again.table_version, DeltaTable(str(table)).version()) == (0, None, 6)


def test_the_resume_finds_the_last_batch_behind_any_number_of_rewrites(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(3):
        commit_batch(table, batch, keep=batch < 2)  # batch 2's offsets were never kept beside the table
    for cycle in range(8):  # 8 x (compaction + VACUUM START + VACUUM END): the batch is 24 commits back
        write_deltalake(table, rows(100 + cycle, 1), mode="append")  # another writer's file, so each compacts
        assert compact_table(table).removed >= 2
        vacuum_table(table, retention_hours=0, dry_run=False, retention_check=False)
    history = DeltaTable(str(table)).history(4)
    assert [h["operation"] for h in history] == ["VACUUM END", "VACUUM START", "WRITE", "WRITE"]
    assert history[2].get("kafkaSparkCompaction") is True
    assert committed_position(table, "s") == batch_commit(2)  # found in batch 2's own commit, and kept
    assert (table / "_kafka_spark" / "offsets" / "s" / "2.json").exists()
    # A checkpoint written after the rewrites keeps the sink's txn.
    DeltaTable(str(table)).create_checkpoint()
    assert DeltaTable(str(table)).transaction_version(app_id("s")) == 2


def test_the_direct_writer_commits_on_a_stale_snapshot_after_a_compaction(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(3):
        commit_batch(table, batch)
    location = path_location(table)
    stale = DeltaTable(str(table))  # as a stream's direct writer keeps it between micro-batches
    target = DirectTarget(location, stale, stale.schema().to_json())
    compact_table(table)  # another process compacts: the writer's snapshot is behind
    name = "part-direct-3.snappy.parquet"
    pq.write_table(rows(3), table / name)
    file_row = {"path": name, "size": (table / name).stat().st_size, "records": 10, "modificationTime": 0,
                "stats": json.dumps({"numRecords": 10}), "partitionValues": "{}", "badRecords": 0, "firstBad": None,
                "timestamps": None}
    job = DirectJob(LoadOptions(table=str(table), sink_id="s"), batch_commit(3), target, before=stale.version())
    result = finish_job(job, [file_row])
    assert result.status == "committed" and result.batch == 3 and result.table_version == 4
    assert committed_position(table, "s") == batch_commit(3)
    assert offsets(table) == list(range(40))
    # A real conflict (the same sink's batch committed meanwhile by another run) is still refused.
    other = DeltaTable(str(table), version=3)
    job = DirectJob(LoadOptions(table=str(table), sink_id="s"), batch_commit(4),
                    DirectTarget(location, other, other.schema().to_json()), before=3)
    commit_batch(table, 4)
    with pytest.raises(ConcurrentWriterError):
        finish_job(job, [file_row])


def test_overlapping_compactions_never_both_commit_and_appends_meanwhile_do_not_stop_one(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(4):
        commit_batch(table, batch)

    def planned() -> tuple:
        location, snapshot = open_table(table)
        _, bins = plan_bins(snapshot, DEFAULT_TARGET_SIZE)
        files = FileAccess(location)
        return location, snapshot, bins, files, [write_bin(files, snapshot, b) for b in bins]

    # Appends land between the plan and the commit: the commit goes on top of them.
    location, snapshot, bins, files, written = planned()
    write_deltalake(table, rows(50, 1), mode="append")
    write_deltalake(table, rows(60, 1), mode="append")
    assert commit_rewrite(location, snapshot, bins, written) == 6  # on top of versions 4 and 5
    assert len(DeltaTable(str(table)).file_uris()) == 3
    # Another compaction (delta-rs's own here) rewrites the same files first: this one commits nothing.
    location, snapshot, bins, files, written = planned()
    DeltaTable(str(table)).optimize.compact()
    assert commit_rewrite(location, snapshot, bins, written) is None
    files.delete(w.path for w in written)
    assert offsets(table) == [*range(40), 50, 60]
    assert not any((table / w.path).exists() for w in written)


def test_vacuum_deletes_what_compactions_removed_and_keeps_the_sinks_files(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(4):
        commit_batch(table, batch)
    compact_table(table)
    stray = table / "part-killed-compaction.zstd.parquet"  # a compaction killed before its commit left this
    pq.write_table(rows(9), stray)
    with pytest.raises(ConfigError, match=r"below the table's delta.deletedFileRetentionDuration \(168 hours\)"):
        vacuum_table(table, retention_hours=0)
    dry = vacuum_table(table, retention_hours=0, retention_check=False)
    assert len(dry.files) == 4 and all((table / f).exists() for f in dry.files)
    done = vacuum_table(table, retention_hours=0, retention_check=False, dry_run=False)
    assert done.files == dry.files and not any((table / f).exists() for f in done.files)
    assert stray.exists()  # only `full` deletes files that no commit names
    version = DeltaTable(str(table)).version()
    assert vacuum_table(table, retention_hours=0, retention_check=False, dry_run=False).files == []
    assert DeltaTable(str(table)).version() == version  # nothing to delete: no commit
    full = vacuum_table(table, retention_hours=0, retention_check=False, dry_run=False, full=True)
    assert full.files == [stray.name] and not stray.exists()
    kept = sorted(p.name for p in (table / "_kafka_spark" / "offsets" / "s").iterdir())
    assert kept == ["0.json", "1.json", "2.json", "3.json", "pending"]
    assert offsets(table) == list(range(40)) and committed_position(table, "s") == batch_commit(3)


def test_a_dry_run_estimates_per_partition_and_commits_nothing(tmp_path: Path):
    table = tmp_path / "t"
    for n in range(6):
        write_deltalake(table, pa.table({"k": [n % 2], "n": [n]}), mode="append", partition_by=["k"])
    write_deltalake(table, pa.table({"k": [2], "n": [9]}), mode="append", partition_by=["k"])  # alone: stays
    plan = compact_table(table, dry_run=True)
    assert (plan.files_before, plan.removed, plan.added, plan.files_after, plan.dry_run) == (7, 6, 2, 3, True)
    assert DeltaTable(str(table)).version() == 6
    done = compact_table(table)
    assert (done.removed, done.added, done.files_after) == (6, 2, 3)


def test_tables_under_a_root_and_missing_tables(tmp_path: Path):
    for name in ("b", "a", "_kafka_spark"):
        write_deltalake(tmp_path / name, rows(0), mode="append")
    (tmp_path / "plain").mkdir()
    assert tables_under(str(tmp_path)) == [f"{tmp_path}/a", f"{tmp_path}/b"]
    with pytest.raises(NoTableError, match="no Delta table there"):
        compact_table(tmp_path / "plain")


def test_stream_options_check_compaction_settings():
    base = {"table": "/t", "kafka": {"bootstrap.servers": "h:1"}, "topics": ["a"]}
    assert StreamOptions(**base, compact_every=5, compact_target_size=1 << 20, vacuum_retention_hours=0).compacting
    for extra, message in [({"compact_every": 0}, "compact_every: must be at least 1"),
                           ({"compact_every": "5"}, "compact_every: expected a whole number of micro-batches"),
                           ({"compact_every": 2, "compact_target_size": 0}, "compact_target_size: must be at least"),
                           ({"compact_every": 2, "vacuum_retention_hours": -1}, "vacuum_retention_hours: must be 0"),
                           ({"compact_target_size": 10}, "compact_target_size only applies with compact_every"),
                           ({"vacuum_retention_hours": 1}, "vacuum_retention_hours only applies with")]:
        with pytest.raises(ConfigError, match=message):
            StreamOptions(**base, **extra)


def test_the_commands_compact_and_vacuum_a_table_and_refuse_bad_flags(tmp_path: Path, capsys):
    table = tmp_path / "t"
    for batch in range(3):
        commit_batch(table, batch)
    assert main(["optimize", "--table", str(table), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tables"][0] | {"seconds": 0} == {"status": "done", "table": str(table), "files_before": 3,
                                                 "files_after": 1, "removed": 3, "added": 1, "table_version": 3,
                                                 "seconds": 0}
    assert main(["vacuum", "--table", str(table), "--retention-hours", "0", "--no-retention-check"]) == 0
    assert "deleted 3 files removed more than 0 hours ago" in capsys.readouterr().out
    for argv, message in [(["optimize"], "give the tables"),
                          (["optimize", "--table", str(table), "--root", str(tmp_path)], "give only one of"),
                          (["optimize", "--table", str(table), "--topic", "x"], "--topic and --pattern only"),
                          (["optimize", "--table", str(table), "--target-size", "big"], "--target-size: expected"),
                          (["vacuum", "--table", str(table), "--retention-hours", "0"], "below the table's"),
                          (["optimize", "--table", str(tmp_path / "none")], "no Delta table there"),
                          (["optimize", "--table-template", "/l/{topic}", "--topic", "a"], "needs --bootstrap")]:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert offsets(table) == list(range(30)) and os.path.isdir(table / "_kafka_spark")


def test_the_streams_flags_settings_file_and_environment_give_its_compaction(tmp_path: Path):
    from kafka_spark.app.stream import build_parser, compacting, config_from_args

    settings = tmp_path / "stream.toml"
    settings.write_text('compact-every = 60\ncompact-target-size = "128m"\n')
    args = build_parser().parse_args(["--config", str(settings), "--vacuum-retention-hours", "168"])
    config = config_from_args(args, environ={"KAFKA_SPARK_COMPACT_EVERY": "30"})
    assert compacting(config) == {"compact_every": 30, "compact_target_size": 128 << 20, "vacuum_retention_hours": 168}
    for argv, message in [(["--compact-every", "0"], "--compact-every: must be at least 1"),
                          (["--compact-every", "5", "--compact-target-size", "1.5g"], "--compact-target-size: exp"),
                          (["--vacuum-retention-hours", "1"], "--vacuum-retention-hours only applies with")]:
        with pytest.raises(ConfigError, match=message):
            config_from_args(build_parser().parse_args(argv), environ={})

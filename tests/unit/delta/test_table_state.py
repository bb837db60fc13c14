"""The table state the sink reads through delta-rs: exact when other commits land, after log cleanup, on file: URIs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from kafka_spark.client.metadata import TopicPartition
from kafka_spark.delta.errors import DeltaLogError
from kafka_spark.delta.position import (
    committed_position,
    committed_positions,
    logged_commit,
    materialize,
    write_pending,
)
from kafka_spark.delta.table_state import TableState
from kafka_spark.sink.position import SinkCommit, app_id
from kafka_spark.sink.table_files import local_path

ROWS = pa.table({"n": pa.array([1], pa.int64())})


def sink_commit(sink_id: str, batch: int) -> SinkCommit:
    return SinkCommit(sink_id=sink_id, batch=batch, offsets={TopicPartition("t", 0): 10 * (batch + 1)},
                      run_id=f"run-{batch}")


def commit_batch(table: Path, commit: SinkCommit) -> None:
    """What the sink's Spark write records: the rows, `txn` of the sink and the batch as userMetadata."""
    write_pending(table, commit)
    write_deltalake(table, ROWS, mode="append", commit_properties=CommitProperties(
        app_transactions=[Transaction(app_id(commit.sink_id), commit.batch)],
        custom_metadata={"userMetadata": commit.to_json()}))


def other_commit(table: Path) -> None:
    write_deltalake(table, ROWS, mode="append")


def test_no_table_is_no_state(tmp_path: Path):
    for location in (tmp_path / "missing", tmp_path):
        state = TableState(location)
        assert state.refresh() is None
        assert state.txn_versions(["kafka-spark/x"]) == {} and state.commit_infos(0) == []
        assert committed_positions(location) == {} and committed_position(location, "x") is None


def test_a_commit_is_found_by_content_and_its_version_from_snapshots(tmp_path: Path):
    table = tmp_path / "t"
    other_commit(table)
    commit_batch(table, sink_commit("a", 0))
    other_commit(table)
    state = TableState(table)
    assert state.refresh() == 2
    # Commits that land after the load are listed too; delta-rs's own version labels would then be off.
    other_commit(table)
    commit_batch(table, sink_commit("b", 0))
    found = logged_commit(state, "a", 0, since=1)
    assert found is not None and found[0] == sink_commit("a", 0)
    assert logged_commit(state, "a", 0, since=2) is None
    assert state.version_reaching(app_id("a"), 0, after=0) == 1
    assert state.version_reaching(app_id("a"), 1, after=0) is None
    assert state.txn_versions([app_id("a"), app_id("b")]) == {app_id("a"): 0}
    assert committed_positions(table) == {"a": sink_commit("a", 0), "b": sink_commit("b", 0)}


def test_position_after_log_cleanup_comes_from_the_checkpoint_and_the_kept_offsets(tmp_path: Path):
    table = tmp_path / "t"
    for batch in range(3):
        commit_batch(table, sink_commit("a", batch))
    other_commit(table)
    DeltaTable(table).create_checkpoint()
    for old in (table / "_delta_log").glob("*.json"):
        if int(old.name[:20]) < 3:
            old.unlink()
    state = TableState(table)
    state.refresh()
    assert state.txn_versions([app_id("a")]) == {app_id("a"): 2}
    assert logged_commit(state, "a", 2, since=0) is None
    # Without the kept offsets of batch 2 its offsets are gone with the commit file: an error, never a guess.
    with pytest.raises(DeltaLogError, match="cleaned up"):
        committed_position(table, "a")
    materialize(table, sink_commit("a", 2))
    assert committed_position(table, "a") == sink_commit("a", 2)


def test_a_commit_whose_kept_offsets_are_missing_is_read_and_kept(tmp_path: Path):
    table = tmp_path / "t"
    commit_batch(table, sink_commit("a", 0))
    for _ in range(20):
        other_commit(table)
    assert committed_position(table, "a") == sink_commit("a", 0)
    assert (table / "_kafka_spark" / "offsets" / "a" / "0.json").exists()


def test_file_uris_and_paths_read_the_same_table(tmp_path: Path):
    table = tmp_path / "t"
    commit_batch(table, sink_commit("a", 0))
    for location in (str(table), f"file:{table}", f"file://{table}", table.as_uri()):
        assert committed_position(location, "a") == sink_commit("a", 0), location
    assert local_path(f"file://localhost{table}") == table
    assert local_path("s3a://bucket/t") is None and local_path("relative/t") == Path("relative/t")

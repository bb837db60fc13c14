"""`kafka-spark optimize` on Iceberg tables: a table of small appends compacted into fewer files with the same rows and
the same sink positions, by the command a user types (no Spark imported); `--dry-run` commits nothing;
`--target-size` and `--json`; the tables of a settings file, of KAFKA_SPARK_TABLE_FORMAT and of a table per topic;
a missing table named in the error; `kafka-spark vacuum` refused for Iceberg tables.

The tables are written by the sink's pyiceberg append (each batch one file and one snapshot with its offsets), so
no test here starts Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from iceberg_support import new_topic, scanned

from kafka_spark.cli.main import main
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.iceberg import IcebergCatalog, committed_positions
from kafka_spark.iceberg.batch_append import append_batch, create_table
from kafka_spark.iceberg.position import IcebergLocation
from kafka_spark.sink import SinkCommit

REPO = Path(__file__).resolve().parents[3]


def rows(topic: str, start: int, n: int) -> pa.Table:
    return pa.table({"topic": pa.array([topic] * n, pa.string()), "partition": pa.array([0] * n, pa.int32()),
                     "offset": pa.array(range(start, start + n), pa.int64())})


def appended_table(catalog: IcebergCatalog, name: str, sinks: dict[str, int], size: int = 5) -> IcebergLocation:
    """Table `name` holding, per sink (its topic named after it), that many batches of `size` records: a data
    file and a snapshot with the sink's offsets each."""
    location = IcebergLocation(catalog, catalog.identifier(name))
    create_table(location, rows("t", 0, 0).schema)
    for sink, batches in sinks.items():
        for batch in range(batches):
            end = size * (batch + 1)
            append_batch(location, rows(sink, end - size, size),
                         SinkCommit(sink, batch, {TopicPartition(sink, 0): end}, run_id=f"run-{sink}"))
    return location


def data_files(location: IcebergLocation) -> list[int]:
    """The sizes of the table's live data files."""
    return location.load().inspect.files().column("file_size_in_bytes").to_pylist()


def snapshot_id(location: IcebergLocation) -> int:
    snapshot = location.load().current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kafka-spark ARGV` in this process: its exit status, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def kafka_spark(*argv: str) -> subprocess.CompletedProcess[str]:
    """`kafka-spark ARGV` as a user runs it, with every module it imports listed on stderr (-X importtime)."""
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "kafka_spark", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_optimize_compacts_small_appends_keeping_rows_and_positions(capsys, catalog):
    location = appended_table(catalog, "db.events", {"s": 4, "other": 2})
    rows_before, positions = scanned(catalog, "db.events"), committed_positions("db.events", catalog)
    before = snapshot_id(location)
    assert len(data_files(location)) == 6
    base = ["optimize", "--table-format", "iceberg", "--table", "db.events", "--iceberg-warehouse",
            str(catalog.warehouse)]

    code, out, err = run(capsys, *base, "--dry-run")
    assert code == 0, err
    assert out.startswith("db.events: would compact 6 files (6 -> 1 files) in "), out
    assert snapshot_id(location) == before and len(data_files(location)) == 6  # nothing written or committed

    done = kafka_spark(*base)
    assert done.returncode == 0, done.stderr
    # 6 appends, then the compaction's snapshot: sequence number 7
    assert done.stdout.startswith("db.events: compacted 6 files into 1 (6 -> 1 files, Iceberg sequence number 7) "
                                  "in "), done.stdout
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "kafka_spark" in imported and not imported & {"pyspark", "py4j"}, "optimize must not import pyspark"
    assert len(data_files(location)) == 1
    assert scanned(catalog, "db.events") == rows_before
    assert committed_positions("db.events", catalog) == positions
    snapshot = location.load().current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.operation.value == "replace" and snapshot.parent_snapshot_id == before


def test_target_size_json_settings_file_and_environment(capsys, catalog, tmp_path, monkeypatch):
    location = appended_table(catalog, "db.sized", {"s": 4})
    sizes = data_files(location)
    rows_before = scanned(catalog, "db.sized")
    # Room for two of the files in a compacted one, never three: the 4 files become 2.
    target = 2 * max(sizes)
    assert 3 * min(sizes) > target
    warehouse = ["--iceberg-warehouse", str(catalog.warehouse)]

    code, out, err = run(capsys, "optimize", "--table-format", "iceberg", "--table", "db.sized", *warehouse,
                         "--target-size", str(target), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["command"], report["failed"]) == ("optimize", 0)
    [table] = report["tables"]
    assert (table["status"], table["table"], table["files_before"], table["removed"], table["added"],
            table["files_after"], table["table_version"]) == ("done", "db.sized", 4, 4, 2, 2, 5)
    assert len(data_files(location)) == 2 and scanned(catalog, "db.sized") == rows_before

    # A load's settings file of Iceberg tables: its table-format, catalog and table.
    settings = tmp_path / "load.toml"
    settings.write_text(f'table-format = "iceberg"\ntable = "db.sized"\niceberg-warehouse = "{catalog.warehouse}"\n')
    code, out, err = run(capsys, "optimize", "--config", str(settings))
    assert code == 0, err
    assert out.startswith("db.sized: compacted 2 files into 1 (2 -> 1 files, Iceberg sequence number 6) in ")
    code, out, err = run(capsys, "optimize", "--config", str(settings), "--table-format", "delta")
    assert code == 2 and "table-format iceberg, but --table-format delta" in err

    # The format from the environment, as the loads take it.
    monkeypatch.setenv("KAFKA_SPARK_TABLE_FORMAT", "iceberg")
    code, out, err = run(capsys, "optimize", "--table", "db.sized", *warehouse, "--dry-run")
    assert code == 0, err
    assert out.startswith("db.sized: would compact 0 files (1 -> 1 files) in ")
    assert scanned(catalog, "db.sized") == rows_before


def test_a_missing_table_and_vacuum_are_refused(capsys, catalog, tmp_path):
    location = appended_table(catalog, "db.events", {"s": 3})
    before = snapshot_id(location)
    warehouse = ["--iceberg-warehouse", str(catalog.warehouse)]

    # Exit 2 and one line, as for a Delta table given by --table that is not there; checked before any
    # table is compacted, so the table named first is left as it is.
    code, out, err = run(capsys, "optimize", "--table-format", "iceberg", "--table", "db.events", "--table",
                         "db.missing", *warehouse)
    assert (code, out) == (2, "")
    assert err == "kafka-spark: error: db.missing: the Iceberg catalog 'kafka_spark' has no such table\n"
    assert snapshot_id(location) == before

    code, out, err = run(capsys, "vacuum", "--table-format", "iceberg", "--table", "db.events", *warehouse)
    assert code == 2 and out == ""
    assert "vacuum serves Delta tables only" in err and "expire_snapshots" in err and "orphan files" in err
    settings = tmp_path / "stream.toml"
    settings.write_text(f'table-format = "iceberg"\ntable = "db.events"\niceberg-warehouse = "{catalog.warehouse}"\n')
    code, _, err = run(capsys, "vacuum", "--config", str(settings), "--dry-run")
    assert code == 2 and "vacuum serves Delta tables only" in err

    # The flags that reach Delta tables only, and catalog flags for Delta tables, are refused by name.
    code, _, err = run(capsys, "optimize", "--table-format", "iceberg", "--root", str(tmp_path), *warehouse)
    assert code == 2 and "--root: Delta tables only" in err
    code, _, err = run(capsys, "optimize", "--table", str(tmp_path / "delta"), *warehouse)
    assert code == 2 and "--iceberg-warehouse: only with --table-format iceberg" in err
    assert snapshot_id(location) == before


def test_a_table_per_topic(capsys, kafka, catalog):
    topics = [new_topic(kafka, partitions=1) for _ in range(2)]
    appended_table(catalog, f"db.{topics[0]}", {topics[0]: 3})  # the second topic's table is not made yet
    code, out, err = run(capsys, "optimize", "--table-format", "iceberg", "--table-template", "db.{topic}",
                         "--topic", ",".join(topics), "-b", kafka.bootstrap, "--iceberg-warehouse",
                         str(catalog.warehouse))
    assert code == 0, err
    *tables, total = out.splitlines()
    by_table = dict(line.split(": ", 1) for line in tables)
    assert by_table[f"db.{topics[0]}"].startswith("compacted 3 files into 1 (3 -> 1 files, "), out
    assert by_table[f"db.{topics[1]}"] == "no Iceberg table yet" and total == "2 tables, 0 failed", out

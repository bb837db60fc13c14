"""`kafka-spark load` and `kafka-spark stream` with `--table-format iceberg` (and the jobs, through their entry
function): every record lands once in the Iceberg table, as pyiceberg's own scan reads it; a re-run resumes from
the table; a table per topic; a stream of a few micro-batches continued by a load; a settings file; the options
Iceberg does not take yet refused by name; no catalog secret in the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from iceberg_support import every_offset_once, new_topic, produce, summaries

from kafka_spark.cli.main import main
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.iceberg import IcebergCatalog

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cr3t-51-cli"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kafka-spark ARGV` in this process (on the tests' Spark session): its exit status, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ends(summary_offsets: dict[str, dict[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(t, int(p)): o for t, parts in summary_offsets.items() for p, o in parts.items()}


def test_load_lands_every_record_once_and_resumes_from_the_table(capsys, spark, kafka, producer, tmp_path):
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 150)
    warehouse = tmp_path / "warehouse"
    base = ["load", "-b", kafka.bootstrap, "--topic", topic, "--table-format", "iceberg", "--iceberg-warehouse",
            str(warehouse), "--table", "db.events", "--partition-by", "partition",
            "--iceberg-property", f"s3.secret-access-key={SECRET}"]

    code, out, err = run(capsys, *base, "--max-records", "100", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert (first["status"], first["batch"], first["rows"], first["table"]) == ("committed", 0, 100, "db.events")
    assert (first["table_format"], first["catalog"], first["writer"]) == ("iceberg", "kafka_spark", "direct")

    code, out, err = run(capsys, *base)  # the text summary, as a Delta load prints it
    assert code == 0, err
    assert "committed batch 1 of sink 'default' to db.events (Iceberg sequence number 2)" in out
    assert "rows       50 in" in out and "next offset to load, per topic partition (from -> to)" in out
    code, out, _ = run(capsys, *base)
    assert code == 0 and "db.events is up to date (sink 'default', batch 1)" in out

    catalog = IcebergCatalog(warehouse=str(warehouse))
    produce(producer, topic, 30, start=150)
    # `kafka-spark iceberg-offsets`: the table's committed offsets, and with a broker their lag (30 new records)
    shown = ["iceberg-offsets", "db.events", "--iceberg-warehouse", str(warehouse)]
    code, out, err = run(capsys, *shown, "--json")
    assert code == 0, err
    assert json.loads(out)["default"]["batch"] == 1
    assert sum(json.loads(out)["default"]["offsets"][topic].values()) == 150
    code, out, err = run(capsys, *shown, "-b", kafka.bootstrap)
    assert code == 0, err
    assert "sink default: batch 1, committed" in out and "total lag: 30 records" in out
    code, out, err = run(capsys, *shown, "-b", kafka.bootstrap, "--sink-id", "other")
    assert code == 2 and "sink 'other' has not committed to db.events (sinks: default)" in err
    code, out, err = run(capsys, "iceberg-offsets", "db.nothing", "--iceberg-warehouse", str(warehouse))
    assert code == 2 and "db.nothing: the Iceberg catalog 'kafka_spark' has no such table" in err
    code, out, err = run(capsys, *base, "--json")
    resumed = json.loads(out)
    assert (resumed["batch"], resumed["rows"]) == (2, 30)
    assert (sum(resumed["start"][topic].values()), sum(resumed["offsets"][topic].values())) == (150, 180)
    every_offset_once(catalog, "db.events", ends(resumed["offsets"]))
    assert [json.loads(s["kafka-spark.sink.default"])["batch"] for s in summaries(catalog, "db.events")] == [0, 1, 2]
    assert SECRET not in out + err


def test_a_table_per_topic_by_template(capsys, spark, kafka, producer, tmp_path):
    topics = [new_topic(kafka, partitions=1), new_topic(kafka, partitions=2)]
    for n, topic in enumerate(topics):
        produce(producer, topic, 10 * (n + 1))
    warehouse = tmp_path / "warehouse"
    argv = ["load", "-b", kafka.bootstrap, "--topic", ",".join(topics), "--table-format", "iceberg",
            "--iceberg-warehouse", str(warehouse), "--table-template", "bronze.{topic}", "--sink-id", "bronze"]

    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["status"], summary["rows"], summary["failed"], summary["table_format"]) == (
        "committed", 30, [], "iceberg")
    tables = {t["table"]: t for t in summary["tables"]}
    assert set(tables) == {f"bronze.{t}" for t in topics}
    assert all(t["lag"] == 0 and t["writer"] == "direct" for t in tables.values())
    catalog = IcebergCatalog(warehouse=str(warehouse))
    for topic in topics:
        every_offset_once(catalog, f"bronze.{topic}", ends(tables[f"bronze.{topic}"]["offsets"]))

    produce(producer, topics[0], 5, start=10)
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "2 tables of sink 'bronze': 1 committed, 1 up to date" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith(f"bronze.{topics[0]}"))
    assert row == [f"bronze.{topics[0]}", topics[0], "committed", "5", "2", "0"]  # rows, sequence number, lag

    # every table of the template with its lag, as `kafka-spark iceberg-offsets --table-template` shows them
    produce(producer, topics[1], 4, start=20)
    code, out, err = run(capsys, "iceberg-offsets", "--table-template", "bronze.{topic}", "--topic", ",".join(topics),
                         "--sink-id", "bronze", "--iceberg-warehouse", str(warehouse), "-b", kafka.bootstrap, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["total_lag"] == 4
    assert {t["table"]: (t["topic"], t["total_lag"]) for t in shown["tables"]} == {
        f"bronze.{topics[0]}": (topics[0], 0), f"bronze.{topics[1]}": (topics[1], 4)}


def test_a_stream_of_a_few_micro_batches_then_a_load_continues_it(capsys, spark, kafka, producer, tmp_path):
    topic = new_topic(kafka, partitions=2)
    produce(producer, topic, 100)
    warehouse = tmp_path / "warehouse"
    common = ["-b", kafka.bootstrap, "--topic", topic, "--table-format", "iceberg", "--iceberg-warehouse",
              str(warehouse), "--table", "db.stream", "--sink-id", "s"]

    code, out, err = run(capsys, "stream", *common, "--trigger", "available-now", "--max-offsets-per-trigger", "40",
                         "--json")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    batches, final = lines[:-1], lines[-1]
    assert len(batches) == 3 and sum(b["rows"] for b in batches) == 100 and max(b["rows"] for b in batches) <= 40
    assert [b["table_version"] for b in batches] == [1, 2, 3]  # the snapshots' sequence numbers
    assert all("behind_latest" in b for b in batches)
    assert (final["status"], final["rows"], final["batch"], final["table_format"]) == ("finished", 100, 2, "iceberg")
    assert "_kafka_spark/checkpoints/s" in final["checkpoint"]
    catalog = IcebergCatalog(warehouse=str(warehouse))
    every_offset_once(catalog, "db.stream", ends(final["offsets"]))

    # the progress lines of a stream that is not --json, then a load that goes on from the stream's position
    produce(producer, topic, 10, start=100)
    code, out, err = run(capsys, "stream", *common, "--trigger", "available-now")
    assert code == 0, err
    assert "committed batch 3 (Iceberg sequence number 4), 10 rows" in err
    assert "finished after 1 committed micro-batches, 10 rows, sink 's' of db.stream" in out
    produce(producer, topic, 10, start=110)
    code, out, err = run(capsys, "load", *common, "--json")
    loaded = json.loads(out)
    assert (loaded["batch"], loaded["rows"]) == (4, 10)
    every_offset_once(catalog, "db.stream", ends(loaded["offsets"]))


def test_a_settings_file_through_the_job_entry(capsys, spark, kafka, producer, tmp_path):
    """The example file with a cluster's flags over it, run by jobs/kafka_to_delta.py's entry function (the
    one spark-submit runs) and by `kafka-spark load --config` with a file of the user's own."""
    from kafka_spark.app.load import main as job_main

    topic = new_topic(kafka, partitions=1)
    produce(producer, topic, 20)
    warehouse = tmp_path / "warehouse"
    code = job_main(["--config", str(REPO / "conf" / "kafka-to-iceberg.toml"), "-b", kafka.bootstrap, "--topic",
                     topic, "--iceberg-warehouse", str(warehouse), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["table"], summary["catalog"], summary["rows"], summary["sink"]) == (
        "bronze.page_views", "lake", 20, "page-views")
    catalog = IcebergCatalog(warehouse=str(warehouse), name="lake")
    every_offset_once(catalog, "lake.bronze.page_views", ends(summary["offsets"]))

    conf = tmp_path / "orders.toml"
    conf.write_text(f'bootstrap-servers = "{kafka.bootstrap}"\ntopics = ["{topic}"]\ntable-format = "iceberg"\n'
                    f'table = "shop.orders"\nvalue-schema = "n INT"\n'
                    f'transform = "SELECT data.n AS n, partition, offset FROM kafka"\n'
                    f'[iceberg]\nwarehouse = "{warehouse}"\ncredential = "id:{SECRET}"\n')
    code, out, err = run(capsys, "load", "--config", str(conf))
    assert code == 0, err
    assert "committed batch 0 of sink 'default' to shop.orders (Iceberg sequence number 1)" in out
    # the SQL catalog keeps each catalog name's tables apart in its database: this one is kafka_spark's
    orders = IcebergCatalog(warehouse=str(warehouse)).open().load_table(("shop", "orders"))
    rows = orders.scan().to_arrow().sort_by("n").to_pylist()
    assert [r["n"] for r in rows] == list(range(20))
    assert SECRET not in out + err


def test_an_option_iceberg_does_not_take_is_a_one_line_settings_error(capsys, kafka, tmp_path):
    code, out, err = run(capsys, "load", "-b", kafka.bootstrap, "--topic", "t", "--table-format", "iceberg",
                         "--iceberg-warehouse", str(tmp_path), "--table", "db.t", "--value-schema", "n INT",
                         "--dead-letter", "/lake/dead")
    assert code == 2 and out == ""
    assert err.startswith("kafka-spark load: error: --dead-letter: '/lake/dead' is a path; an Iceberg table")
    code, _, err = run(capsys, "stream", "-b", kafka.bootstrap, "--topic", "t", "--table-format", "iceberg",
                       "--iceberg-warehouse", str(tmp_path), "--table", "/lake/t")
    assert code == 2 and "--table: '/lake/t' is a path; an Iceberg table is named in its catalog" in err
    assert not (tmp_path / "catalog.db").exists()  # refused before anything was written

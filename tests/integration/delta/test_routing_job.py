"""`kafka-spark load --config` with a table per topic: three topics into three tables in one run, one `--json`
object per table, then `kafka-spark delta-offsets --config` with every table's position and no lag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from delta_support import delta_offsets, latest, produce, table_rows

from kafka_spark.cli.main import main


def test_load_three_topics_into_three_tables_then_their_offsets(capsys: pytest.CaptureFixture[str], kafka,
                                                                topic_name: str, tmp_path: Path):
    prefix = f"{topic_name[-8:]}-job"
    topics = [f"{prefix}-orders", f"{prefix}-clicks", f"{prefix}.audit"]
    for n, topic in enumerate(topics):
        kafka.create_topic(topic, partitions=2 if n == 0 else 1)
        produce(kafka.bootstrap, topic, 10 * (n + 1))
    lake = tmp_path / "bronze"
    conf = tmp_path / "bronze.toml"
    conf.write_text(f"""
bootstrap-servers = "{kafka.bootstrap}"
pattern = '^{prefix}[.-]'
table-template = "{lake}/{{topic}}"
sink-id = "bronze"
on-table-error = "continue"

[topics."{topics[0]}"]
value-schema = "n INT"
transform = "SELECT data.n AS n, topic, partition, offset FROM kafka"
""")

    code = main(["load", "--config", str(conf), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["status"], summary["rows"], summary["failed"], summary["sink"]) == ("committed", 60, [], "bronze")
    tables = {t["topic"]: t for t in summary["tables"]}
    assert set(tables) == set(topics)
    for n, topic in enumerate(topics):
        table = tables[topic]
        assert (table["table"], table["status"], table["rows"], table["lag"]) == (
            str(lake / topic), "committed", 10 * (n + 1), 0)
        assert table["table_version"] == 0 and table["offsets"] == latest(kafka.bootstrap, topic)
    orders = table_rows(lake / topics[0])
    assert sorted(r["n"] for r in orders) == list(range(10)) and set(orders[0]) == {"n", "topic", "partition",
                                                                                  "offset"}
    assert len(table_rows(lake / topics[2])) == 30

    offsets = delta_offsets("--config", str(conf), "--json")
    assert offsets.returncode == 0, offsets.stderr
    report = json.loads(offsets.stdout)
    assert report["total_lag"] == 0
    assert [(t["table"], t["topic"], t["batch"], t["total_lag"]) for t in report["tables"]] == [
        (str(lake / topic), topic, 0, 0) for topic in sorted(topics)]
    assert {t["topic"]: t["offsets"] for t in report["tables"]} == {t: latest(kafka.bootstrap, t) for t in topics}

    text = delta_offsets("--config", str(conf))
    assert text.returncode == 0, text.stderr
    assert "sink bronze: 3 tables" in text.stdout and "total lag: 0 records" in text.stdout

"""Change events that cannot be applied go to a dead-letter table, the batch's good changes to the table, and
every change to the history table: exactly once across the three, a crash between the MERGE's commit and the
others repaired by the next run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cdc_events import SourceTable, table_state
from delta_support import run_killable
from deltalake import DeltaTable

from kafka_spark.delta import committed_position, load, merge_commit
from kafka_spark.sink import LoadOptions

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _bad(producer, topic: str, source: SourceTable) -> list[str]:
    """Three records Debezium never sends: not JSON, an unknown operation, a create with no key; why each is
    refused."""
    producer.send(topic, b"{not json", key=source.encode_key(90))
    producer.send(topic, json.dumps({"op": "x", "after": {"id": 91}}).encode(), key=source.encode_key(91))
    producer.send(topic, json.dumps({"op": "c", "after": {"name": "no id"}}).encode(), key=None)
    producer.flush()
    return ["the value is not JSON", "unknown operation x", "no value for the key column(s) id"]


class _Crash(Exception):
    pass


def _stop_before_dead_letters(name: str) -> None:
    if name == "before-dead-letters":
        raise _Crash(name)


# The suite stops the load at the point in this process (what the table holds then is what a kill leaves); the
# long schedule (KAFKA_SPARK_KILLS > 2) kills a load process there with SIGKILL.
LONG = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2, reason="long: KAFKA_SPARK_KILLS=10")


@pytest.mark.parametrize("kill", [pytest.param(False, id="stopped"), pytest.param(True, id="sigkill", marks=LONG)])
def test_bad_change_events_go_to_the_dead_letter_table_once_even_when_killed_before_them(
        kafka, spark, producer, topic_name, tmp_path, monkeypatch, kill):
    kafka.create_topic(topic_name, partitions=1)
    table, dead, history = (str(tmp_path / n) for n in ("customers", "dead_letters", "history"))
    source = SourceTable(producer, topic_name, with_schema=False)
    source.snapshot([{"id": i, "name": f"n{i}", "qty": i, "price": 1.0} for i in range(1, 5)])
    reasons = _bad(producer, topic_name, source)
    source.update(2, qty=20)  # after the bad ones: the batch's good changes are applied
    before = source.rows.pop(3)  # a delete whose `before` is the whole row (REPLICA IDENTITY FULL), then its tombstone
    source._send(3, "d", before, None)
    producer.send(topic_name, None, key=source.encode_key(3))
    source.flush()
    options = LoadOptions(table=table, kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name],
                          sink_id="cdc-crash-test", cdc="debezium", cdc_metadata=True, dead_letter=dead,
                          cdc_history=history.replace("history", "{topic}-history") if kill else history)
    if kill:
        history = history.replace("history", f"{topic_name}-history")

    # Stopped after the MERGE's commit, before the dead letters: the table has the batch, the dead letters do not.
    if kill:
        script = Path(__file__).parent / "cdc_load_once.py"
        code, out = run_killable(script, kafka.bootstrap, topic_name, table, dead, options.cdc_history,
                                 crash_at="before-dead-letters")
        assert code == -9, out
    else:
        monkeypatch.setattr(merge_commit, "crash_point", _stop_before_dead_letters)
        with pytest.raises(_Crash):
            load(spark, options)
        monkeypatch.undo()
    assert table_state(spark, table, source.columns) == source.expected()
    first = committed_position(table, "cdc-crash-test")
    assert first.batch == 0 and first.dead_letters == 3 and first.history
    assert not (Path(dead) / "_delta_log").exists() and not (Path(history) / "_delta_log").exists()

    # The next run writes batch 0's dead letters (read again from Kafka), then its own batch with one more.
    source.update(1, name="one")
    producer.send(topic_name, b"", key=source.encode_key(92))  # an empty value: not JSON either
    source.flush()
    result = load(spark, options)
    assert (result.status, result.batch, result.dead_letters) == ("committed", 1, 1)
    assert table_state(spark, table, source.columns) == source.expected()
    letters = spark.read.format("delta").load(dead).orderBy("offset").collect()
    assert [(r["batch"], r["key"] and json.loads(r["key"])["id"], r["error"]) for r in letters] == [
        (0, 90, reasons[0]), (0, 91, reasons[1]), (0, None, reasons[2]), (1, 92, "the value is not JSON")]
    assert letters[0]["value"] == b"{not json" and letters[0]["sink"] == "cdc-crash-test"
    assert DeltaTable(dead).transaction_version("kafka-spark/cdc-crash-test") == 1
    # Every change that has a key, once, in Kafka order, with its operation; a delete's row is its `before`.
    changes = spark.read.format("delta").load(history).orderBy("offset").collect()
    ops = [(r["batch"], r["id"], r["__op"]) for r in changes]
    assert ops == [(0, 1, "r"), (0, 2, "r"), (0, 3, "r"), (0, 4, "r"), (0, 2, "u"), (0, 3, "d"), (0, 3, "d"),
                   (1, 1, "u")]  # the second delete of 3 is its tombstone
    assert changes[4]["qty"] == 20 and changes[-1]["name"] == "one" and changes[4]["partition"] == 0
    assert (changes[5]["name"], changes[5]["qty"]) == ("n3", 3)  # the delete's row: its `before`
    assert changes[6]["name"] is None  # the tombstone carries no row
    # A re-run finds nothing new and writes no dead letter or change twice.
    assert load(spark, options).status == "up-to-date"
    assert spark.read.format("delta").load(dead).count() == 4
    assert spark.read.format("delta").load(history).count() == len(ops)

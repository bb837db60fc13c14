"""The commands with payload formats: `kafka-spark consume --value-format avro` prints the orders Confluent's
Avro serializer framed as JSON (and stops at, or skips, a record that does not decode), and `kafka-spark load
--value-format avro` with the example config loads them into a Delta table whose rows are the orders, their
credentials from a --schema-registry-config file and never printed."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from registry_records import ORDER_V1, avro_serializer, order, produce, serialize

from kafka_spark.cli.main import main

REPO = Path(__file__).resolve().parents[3]
SECRET = "sr-5ecr3t-0b9"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kafka-spark ARGV` in this process: its exit status, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_printed(i: int) -> dict[str, Any]:
    """Order i as the command prints it, parsed with exact decimals."""
    o = order(i)
    return {**o, "placed": o["placed"].replace(tzinfo=None).isoformat("T", "milliseconds") + "Z",
            "day": o["day"].isoformat(), "score": None if o["score"] is None else Decimal(repr(o["score"]))}


def test_consume_prints_decoded_avro_values_as_json(capsys, kafka, registry, confluent_registry, topic_name,
                                                    tmp_path):
    kafka.create_topic(topic_name)
    values = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(i) for i in range(5)])
    keys = serialize(avro_serializer(confluent_registry, "string"), topic_name, [f"k{i}" for i in range(6)], "key")
    produce(kafka.bootstrap, topic_name, [*values, None], keys=keys)
    props = tmp_path / "registry.properties"
    props.write_text(f"schema.registry.url={registry.url}\n")

    code, out, err = run(capsys, "consume", "-b", kafka.bootstrap, "--topic", topic_name, "--value-format", "avro",
                         "--key-format", "avro", "--schema-registry-config", str(props), "--json")
    assert code == 0, err
    records = [json.loads(line, parse_float=Decimal) for line in out.splitlines()]
    assert [r["value"] for r in records] == [*(as_printed(i) for i in range(5)), None]
    assert [(r["offset"], r["key"]) for r in records] == [(i, f"k{i}") for i in range(6)]

    code, out, err = run(capsys, "consume", "-b", kafka.bootstrap, "--topic", topic_name, "--value-format", "avro",
                         "--schema-registry", registry.url, "--max-messages", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-1] == "# 2 records"
    assert [line.split("  ")[0] for line in lines[:2]] == ["0:0", "0:1"]
    assert [json.loads(line.split("  value=", 1)[1], parse_float=Decimal) for line in lines[:2]] == [
        as_printed(0), as_printed(1)]


def test_consume_stops_at_a_record_that_does_not_decode_unless_told_to_skip(capsys, kafka, registry,
                                                                           confluent_registry, topic_name):
    kafka.create_topic(topic_name)
    good = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(1), order(2)])
    produce(kafka.bootstrap, topic_name, [good[0], b"\x05not framed", good[1]])
    argv = ["consume", "-b", kafka.bootstrap, "--topic", topic_name, "--value-format", "avro",
            "--schema-registry", registry.url, "--json"]

    code, out, err = run(capsys, *argv)
    assert code == 1
    assert [json.loads(line)["offset"] for line in out.splitlines()] == [0]
    assert err.startswith(f"kafka-spark consume: error: {topic_name} [0] offset 1: the value does not decode with "
                          f"subject '{topic_name}-value'")
    assert "magic byte" in err and len(err.splitlines()) == 1

    code, out, err = run(capsys, *argv[:-1], "--skip-message-on-error")
    assert code == 0
    assert [line.split("  ")[0] for line in out.splitlines()] == ["0:0", "0:2", "# 2 records, 1 skipped (they do not "
                                                                               "decode)"]
    assert f"{topic_name} [0] offset 1: the value does not decode" in err


def test_load_with_the_avro_example_config_writes_the_orders_as_rows(capsys, spark, kafka, topic_name, tmp_path):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from harness.schema_registry import RegistryServer

    with RegistryServer(users={"loader": SECRET}) as secured:
        client = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": f"loader:{SECRET}"})
        kafka.create_topic(topic_name)
        values = serialize(avro_serializer(client, ORDER_V1), topic_name, [order(i) for i in range(8)])
        produce(kafka.bootstrap, topic_name, [*values[:4], b"\x00\x00\x01\x86\xa0\x02", *values[4:], None])
        props = tmp_path / "registry.properties"
        props.write_text(f"basic.auth.user.info=loader:{SECRET}\n")
        table, dead = tmp_path / "orders", tmp_path / "orders-dead"

        code, out, err = run(capsys, "load", "--config", str(REPO / "conf" / "avro-orders.toml"),
                             "-b", kafka.bootstrap, "--topic", topic_name, "--table", str(table),
                             "--dead-letter", str(dead), "--schema-registry", secured.url,
                             "--schema-registry-config", str(props), "--json")
    assert code == 0, err
    assert SECRET not in out + err
    summary = json.loads(out)
    assert (summary["status"], summary["rows"], summary["dead_letters"]) == ("committed", 8, 1)
    assert summary["offsets"] == {topic_name: {"0": 10}}

    rows = [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(table)).orderBy("offset").collect()]
    assert [r.pop("offset") for r in rows] == [0, 1, 2, 3, 5, 6, 7, 8]
    for r in rows:
        del r["partition"], r["kafka_timestamp"]
    # The session's time zone is UTC: timestamps come back naive, in UTC.
    assert rows == [{**order(i), "placed": order(i)["placed"].replace(tzinfo=None)} for i in range(8)]
    letters = spark.read.format("delta").load(str(dead)).collect()
    assert [(r["offset"], bytes(r["value"])) for r in letters] == [(4, b"\x00\x00\x01\x86\xa0\x02")]
    assert "100000" in letters[0]["error"]

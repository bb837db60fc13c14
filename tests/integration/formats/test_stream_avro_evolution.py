"""A stream with schemaEvolutionMode=addNewColumns follows its subject through three compatible versions while it
runs and is SIGKILLed once: each new version's field becomes a column of the table in the commit of the first
micro-batch that holds it, older records keep being read through their writer schemas, and every record is in the
table once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from delta_support import STREAM_ONCE, produce_numbered
from deltalake import DeltaTable
from registry_records import avro_serializer, serialize
from stream_once import EVOLUTION_ENV, REGISTRY_ENV

from kafka_spark.client.producer.producer import Producer
from kafka_spark.delta import start_stream
from kafka_spark.sink import StreamOptions

V1 = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "long"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "name", "type": "string", "default": "none"}]}
V3 = {**V2, "fields": [*V2["fields"], {"name": "price", "type": "double", "default": 0.0}]}


def _wait(what: str, check, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # the table is not there yet, or is being written
            pass
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _columns(table: Path) -> set[str]:
    value = next(f for f in DeltaTable(str(table)).schema().fields if f.name == "value")
    return {f.name for f in value.type.fields}


def _rows(table: Path) -> int:
    return DeltaTable(str(table)).to_pyarrow_table(columns=["offset"]).num_rows


def test_stream_adds_each_new_versions_columns_and_survives_a_kill(kafka, spark, registry, confluent_registry,
                                                                  topic_name, tmp_path, monkeypatch):
    kafka.create_topic(topic_name, partitions=3)
    versions = [avro_serializer(confluent_registry, schema) for schema in (V1, V2, V3)]

    def encode(n: int) -> bytes:
        value: dict = {"n": n}
        if n >= 100:
            value["name"] = f"name-{n}"
        if n >= 200:
            value["price"] = n * 1.5
        framed = serialize(versions[min(n // 100, 2)], topic_name, [value])[0]
        assert framed is not None
        return framed

    monkeypatch.setenv(REGISTRY_ENV, registry.url)
    monkeypatch.setenv(EVOLUTION_ENV, "addNewColumns")
    table = tmp_path / "table"
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5}) as producer:
        produce_numbered(producer, topic_name, 100, encode=encode)
        stream = subprocess.Popen([sys.executable, str(STREAM_ONCE), kafka.bootstrap, topic_name, str(table), "1s",
                                   "300", "60", "auto"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ), start_new_session=True)
        try:
            _wait("the first version's records", lambda: _rows(table) >= 100, 240)
            produce_numbered(producer, topic_name, 100, start=100, encode=encode)
            _wait("the second version's column", lambda: "name" in _columns(table))
            produce_numbered(producer, topic_name, 100, start=200, encode=encode)
            _wait("the third version's column", lambda: "price" in _columns(table))
            produce_numbered(producer, topic_name, 50, start=300, encode=encode)
        finally:
            # killed with its JVM at once, whatever micro-batch it is in
            os.killpg(stream.pid, signal.SIGKILL)
            stream.wait()
        produce_numbered(producer, topic_name, 50, start=350, encode=encode)
    # the restart catches up in this process: the table and the checkpoint say where it is
    query = start_stream(spark, StreamOptions(
        table=str(table), kafka={"bootstrap.servers": kafka.bootstrap}, topics=[topic_name], sink_id="crash-test",
        trigger="available-now", value_format="avro", schema_registry={"url": registry.url},
        format_options={"schemaEvolutionMode": "addNewColumns"}))
    query.awaitTermination()

    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["partition", "offset", "value"]).to_pylist()
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows) == 400
    assert sorted(r["value"]["n"] for r in rows) == list(range(400))
    for row in rows:
        value = row["value"]
        n = value["n"]
        # v1 records committed before the column existed hold null; read after it, the field's default
        assert value["name"] == (f"name-{n}" if n >= 100 else value["name"]) and value["name"] in (
            None, "none", f"name-{n}")
        assert value["price"] == (n * 1.5 if n >= 200 else value["price"]) and value["price"] in (None, 0.0, n * 1.5)
    assert _columns(table) == {"n", "name", "price"}

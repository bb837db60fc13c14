"""A stream into Delta, SIGKILLed at both sides of the commit and at random moments (some restarts without the
checkpoint), holds every record exactly once — the suite's stream kill test, with Avro values decoded on the way,
each to the number it was given. The runs take turns with Spark's writer and the direct one (the crash after the
commit is the direct writer's, and a direct run replays it).

Long schedule only (`KAFKA_SPARK_KILLS=3` or more): in the suite an Avro stream is killed in
test_stream_avro_evolution.py and a routed stream, both writers taking turns, in delta/test_routing.py."""

from __future__ import annotations

import os

import pytest
from delta_support import catch_up_stream, keep_producing, kill_stream_repeatedly, produce_numbered
from deltalake import DeltaTable
from registry_records import avro_serializer, serialize
from stream_once import REGISTRY_ENV

from kafka_spark.client.producer.producer import Producer

pytestmark = pytest.mark.skipif(int(os.environ.get("KAFKA_SPARK_KILLS", "2")) <= 2,
                                reason="long schedule: KAFKA_SPARK_KILLS=10 (the suite kills an Avro stream in "
                                       "test_stream_avro_evolution.py)")

NUMBER = {"type": "record", "name": "Numbered", "fields": [{"name": "n", "type": "long"}]}


def test_sigkilled_avro_stream_keeps_every_record_exactly_once(kafka, registry, confluent_registry, topic_name,
                                                                tmp_path, monkeypatch):
    kafka.create_topic(topic_name, partitions=3)
    serializer = avro_serializer(confluent_registry, NUMBER)

    def encode(n: int) -> bytes:
        framed = serialize(serializer, topic_name, [{"n": n}])[0]
        assert framed is not None
        return framed

    monkeypatch.setenv(REGISTRY_ENV, registry.url)
    table = tmp_path / "table"
    with Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5}) as producer:
        produce_numbered(producer, topic_name, 600, encode=encode)
        with keep_producing(producer, topic_name, start=600, step=5, encode=encode):
            outcomes = kill_stream_repeatedly(kafka.bootstrap, topic_name, table)
    ends = catch_up_stream(kafka.bootstrap, topic_name, table, writer="direct")

    # Both writers committed micro-batches of the one sink, each continuing from the other's position.
    engines = {c["engineInfo"].split("/")[0].split(":")[0] for c in DeltaTable(str(table)).history()
               if c.get("userMetadata")}
    assert engines == {"Apache-Spark", "delta-rs"}, outcomes

    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["partition", "offset", "value"]).to_pylist()
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows) == sum(ends.values())
    numbers = sorted(r["value"]["n"] for r in rows)
    assert numbers == list(range(len(rows)))  # each produced number once, none lost, none twice

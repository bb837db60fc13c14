"""`format("pykafka")` with `valueFormat=avro`: records framed by Confluent's Avro serializer decode, in the task that
fetched them, to exactly the objects the serializer was given; evolution, pinning and bad records as documented."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from registry_records import ORDER_V1, ORDER_V2, avro_serializer, order, produce, read_options, serialize

from kafka_spark.formats.registry.wire import frame


def as_spark_returns(spark, value: dict) -> dict:
    """An order as Spark collects it: timestamps naive in the session's time zone, enums as strings."""
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    return {**value, "placed": value["placed"].astimezone(zone).replace(tzinfo=None)}


def load(spark, options: dict[str, str]):
    return spark.read.format("pykafka").options(**options).load()


def test_avro_values_decode_to_the_serializers_objects(spark, kafka, registry, confluent_registry, topic_name):
    kafka.create_topic(topic_name)
    orders = [order(i) for i in range(20)]
    values = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [*orders, None])
    produce(kafka.bootstrap, topic_name, values)

    df = load(spark, read_options(registry.url, kafka.bootstrap, topic_name))
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,amount:decimal(12,2),placed:timestamp,day:date,tags:array<string>,"
        "attrs:map<string,bigint>,status:string,address:struct<street:string,zip:string>,score:double>")
    rows = sorted(df.collect(), key=lambda r: r["offset"])
    assert [r["value"].asDict(recursive=True) if r["value"] is not None else None for r in rows] == [
        *(as_spark_returns(spark, o) for o in orders), None]
    assert [r["offset"] for r in rows] == list(range(21))


def test_query_schema_is_latest_or_pinned_and_restart_mode_stops_on_newer(spark, kafka, registry,
                                                                         confluent_registry, topic_name):
    kafka.create_topic(topic_name)
    old = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(i) for i in range(3)])
    new_orders = [{**order(i), "channel": "app"} for i in range(3, 6)]
    new = serialize(avro_serializer(confluent_registry, ORDER_V2), topic_name, new_orders)
    produce(kafka.bootstrap, topic_name, old + new)

    latest = load(spark, read_options(registry.url, kafka.bootstrap, topic_name))
    channels = [r["value"]["channel"] for r in latest.orderBy("offset").collect()]
    assert channels == ["web", "web", "web", "app", "app", "app"]  # v1 records get v2's default

    pinned = load(spark, read_options(registry.url, kafka.bootstrap, topic_name, valueSchemaVersion="1"))
    assert "channel" not in pinned.schema["value"].dataType.fieldNames()
    assert [r["value"]["id"] for r in pinned.orderBy("offset").collect()] == list(range(6))

    restart = load(spark, read_options(registry.url, kafka.bootstrap, topic_name, valueSchemaVersion="1",
                                       schemaEvolutionMode="restart"))
    with pytest.raises(Exception, match="newer version of subject") as failure:
        restart.collect()
    assert f"{topic_name} [0] offset 3" in str(failure.value)


def test_bad_records_fail_naming_the_offset_or_are_kept_with_the_reason(spark, kafka, registry, confluent_registry,
                                                                        topic_name):
    kafka.create_topic(topic_name)
    good = serialize(avro_serializer(confluent_registry, ORDER_V1), topic_name, [order(1)])[0]
    assert good is not None
    bad = [b"\x05not framed", frame(999_999, b"\x02"), good[:-4], b""]
    produce(kafka.bootstrap, topic_name, [good, *bad])

    with pytest.raises(Exception, match=rf"{topic_name} \[0\] offset 1: the value does not decode"):
        load(spark, read_options(registry.url, kafka.bootstrap, topic_name)).collect()

    rows = load(spark, read_options(registry.url, kafka.bootstrap, topic_name, mode="PERMISSIVE")).orderBy(
        "offset").collect()
    assert rows[0]["value"]["id"] == 1 and rows[0]["valueError"] is None and rows[0]["rawValue"] is None
    assert [r["value"] for r in rows[1:]] == [None] * 4
    assert [bytes(r["rawValue"]) for r in rows[1:]] == bad
    reasons = [r["valueError"] for r in rows[1:]]
    assert "magic byte 0x05" in reasons[0]
    assert "999999" in reasons[1]
    assert all(reasons), reasons


def test_stream_decodes_each_micro_batch(spark, kafka, registry, confluent_registry, topic_name, tmp_path):
    kafka.create_topic(topic_name)
    serializer = avro_serializer(confluent_registry, ORDER_V1)
    produce(kafka.bootstrap, topic_name, serialize(serializer, topic_name, [order(i) for i in range(5)]))
    seen: list[int] = []

    def collect(batch, batch_id):
        seen.extend(r["value"]["id"] for r in batch.collect())

    query = (spark.readStream.format("pykafka")
             .options(**read_options(registry.url, kafka.bootstrap, topic_name, startingOffsets="earliest",
                                     maxOffsetsPerTrigger="2"))
             .load().writeStream.foreachBatch(collect).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(seen) == list(range(5))


def test_registry_credentials_work_and_never_show_in_plans_or_errors(spark, kafka, topic_name, capsys):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from harness.schema_registry import RegistryServer

    secret = "r3gistry-s3cret-9f2"
    kafka.create_topic(topic_name)
    with RegistryServer(users={"svc": secret}) as private:
        client = SchemaRegistryClient({"url": private.url, "basic.auth.user.info": f"svc:{secret}"})
        produce(kafka.bootstrap, topic_name, serialize(avro_serializer(client, ORDER_V1), topic_name, [order(1)]))
        options = read_options(private.url, kafka.bootstrap, topic_name,
                               **{"schema.registry.basic.auth.user.info": f"svc:{secret}"})
        df = load(spark, options)
        assert [r["value"]["id"] for r in df.collect()] == [1]
        assert secret not in df._jdf.queryExecution().toString()
        for mode in ("simple", "extended", "formatted"):
            df.explain(mode)
        assert secret not in capsys.readouterr().out

        wrong = {**options, "schema.registry.basic.auth.user.info": "svc:not-the-password"}
        with pytest.raises(Exception, match="401") as refused:
            load(spark, wrong).collect()
        assert "not-the-password" not in str(refused.value)

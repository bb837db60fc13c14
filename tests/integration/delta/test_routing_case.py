"""Topics whose names differ only in case (`Orders`, `orders`) are refused by a routed load before anything is
written: on a case-insensitive store their two paths are one table, where one topic's batch would be skipped as
already committed and still be reported committed."""

from __future__ import annotations

import pytest
from delta_support import produce_numbered

from kafka_spark.delta import load_tables
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, Routing


def test_a_routed_load_of_topics_that_differ_only_in_case_fails_and_writes_nothing(spark, kafka, producer,
                                                                                    topic_name, tmp_path):
    upper, lower = f"Case-{topic_name}", f"case-{topic_name}"
    for topic in (upper, lower):
        kafka.create_topic(topic, partitions=1)
        produce_numbered(producer, topic, 3)
    lake = tmp_path / "bronze"
    kafka_conf = {"bootstrap.servers": kafka.bootstrap}
    routings = {
        "template": Routing(template=f"{lake}/{{topic}}"),
        "map": Routing(tables={upper: f"{lake}/{upper}", lower: f"{lake}/{lower}"}),
    }
    for how, routing in routings.items():
        options = LoadOptions(kafka=kafka_conf, topics=[upper, lower], sink_id="bronze", routing=routing)
        with pytest.raises(ConfigError) as info:
            load_tables(spark, options)
        text = str(info.value)
        assert f"topics {upper!r} and {lower!r} both go to the table" in text, (how, text)
        assert f"{lake}/{upper}" in text and f"{lake}/{lower}" in text and "differ only in case" in text, (how, text)
        assert not lake.exists() or not any(lake.iterdir()), (how, sorted(lake.rglob("*")))

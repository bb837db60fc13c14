"""The sink's options by concern: the flat `LoadOptions` / `StreamOptions` users build hand out the parts."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.sink.options import KafkaSource, Pacing, Publishing, SinkTarget, ValueParsing, WriteFormat

KAFKA = {"bootstrap.servers": "h:9092", "security.protocol": "SSL"}


def test_each_part_holds_its_concern_from_the_current_values():
    options = LoadOptions(table="/t", kafka=KAFKA, topics=["a"], sink_id="s", starting=0, max_records=5,
                          transform="SELECT * FROM kafka", value_schema="n INT", dead_letter="/dead",
                          publish_group="g", start_zookeeper_group="old", partition_by=["partition"])
    options.fail_on_data_loss = False  # later changes show in the parts
    assert options.source == KafkaSource(KAFKA, ["a"], None, 0, False, False, "old")
    assert options.target == SinkTarget("/t", "s")
    assert options.format == WriteFormat("SELECT * FROM kafka", ["partition"])
    assert options.parsing == ValueParsing("n INT", "/dead")
    assert options.publishing == Publishing(KAFKA, "g", None)
    assert dataclasses.replace(options, value_schema=None).parsing == ValueParsing(None, "/dead")


def test_source_and_pacing_give_the_readers_options():
    source = StreamOptions(table="/t", kafka=KAFKA, topics=["a"], include_headers=True).source
    assert source.client_options() == {"kafka.bootstrap.servers": "h:9092", "kafka.security.protocol": "SSL"}
    assert source.read_flags() == {"failOnDataLoss": "true", "includeHeaders": "true"}
    pacing = Pacing("10s", max_offsets_per_trigger=100, max_trigger_delay="5m", source_options={"minPartitions": "4"})
    assert pacing.reader_options() == {"maxOffsetsPerTrigger": "100", "maxTriggerDelay": "5m", "minPartitions": "4"}


def test_a_streams_checkpoint_goes_beside_a_path_table_and_must_be_given_for_a_catalog_one():
    assert StreamOptions(table="/t/", kafka=KAFKA, sink_id="s").checkpoint_location == "/t/_kafka_spark/checkpoints/s"
    assert StreamOptions(table="/t", kafka=KAFKA, checkpoint="/c").checkpoint_location == "/c"
    with pytest.raises(ConfigError, match="beside the table's location"):
        _ = StreamOptions(table="db.events", kafka=KAFKA).checkpoint_location

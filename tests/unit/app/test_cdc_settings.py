"""Change data capture settings: the flags, the settings-file keys and the example file become checked options."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_spark.app import load, stream
from kafka_spark.app.config import validate
from kafka_spark.app.source import Source, sink_settings
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.sink.change_capture import ChangeCapture

REPO = Path(__file__).resolve().parents[3]
BROKER = ["--bootstrap-server", "broker:9092", "--topic", "t", "--table", "/lake/t"]


def _source(topics: list[str]) -> Source:
    return Source({"bootstrap.servers": "broker:9092"}, topics, None, "broker:9092", embedded=False)


def test_the_cdc_example_config_streams_every_debezium_topic_as_a_table():
    config, _ = stream.read_config(["--config", str(REPO / "conf" / "cdc-to-delta.toml")])
    validate(config)
    options = StreamOptions(**sink_settings(config, _source([]), None))
    assert options.changes == ChangeCapture("debezium", (), metadata=True)
    assert options.routing is not None and (options.routing.template or "").endswith("data/silver/{topic}")


def test_cdc_flags_become_the_options():
    config, _ = load.read_config([*BROKER, "--cdc", "upsert", "--key-columns", "tenant,user", "--cdc-metadata",
                                  "true", "--cdc-soft-delete", "true"])
    validate(config)
    options = LoadOptions(**sink_settings(config, _source(["t"]), "/lake/t"))
    assert options.changes == ChangeCapture("upsert", ("tenant", "user"), metadata=True, soft_delete=True)


@pytest.mark.parametrize(("argv", "message"), [
    (["--cdc", "maxwell"], "--cdc: expected debezium, upsert or none"),
    (["--key-columns", "id"], "give cdc"),
    (["--cdc-metadata", "true"], "give cdc"),
    (["--cdc-soft-delete", "true"], "give cdc"),
    (["--cdc", "upsert", "--key-columns", "__deleted"], "metadata column"),
    (["--cdc", "debezium", "--transform", "SELECT * FROM kafka"], "transform"),
    (["--cdc", "debezium", "--key-columns", "id,id"], "twice"),
])
def test_cdc_settings_that_do_not_hold_are_one_line_errors(argv, message):
    with pytest.raises(ConfigError, match=message):
        validate(load.read_config([*BROKER, *argv])[0])


def test_cdc_takes_delta_rs_merge_for_path_tables_and_refuses_it_for_catalog_tables():
    from kafka_spark.delta.writer_choice import choose_writer

    for writer in ("direct", "auto"):
        options = LoadOptions(table="/lake/t", topics=["t"], cdc="debezium", writer=writer)
        choice = choose_writer(None, options, None)
        assert (choice.writer, choice.target, choice.reason) == ("direct", None, None)
    options = LoadOptions(table="lake.orders", topics=["t"], cdc="debezium", writer="direct")
    with pytest.raises(ConfigError, match=r"catalog table .*MERGE on Spark"):
        choose_writer(None, options, None)


def test_cdc_takes_registry_formats_for_keys_and_values():
    config, _ = load.read_config([*BROKER, "--cdc", "debezium", "--value-format", "avro", "--key-format", "avro",
                                  "--schema-registry", "http://r:8081"])
    validate(config)
    options = LoadOptions(**sink_settings(config, _source(["t"]), "/lake/t"))
    assert options.changes == ChangeCapture("debezium", ())
    assert options.decoding["valueFormat"] == "avro" and options.decoding["keyFormat"] == "avro"


def test_a_dead_letter_table_needs_no_value_schema_with_cdc_and_does_without():
    validate(load.read_config([*BROKER, "--cdc", "debezium", "--dead-letter", "/lake/dead"])[0])
    with pytest.raises(ConfigError, match="needs value_schema"):
        validate(load.read_config([*BROKER, "--dead-letter", "/lake/dead"])[0])

"""The jobs' payload-format settings: keys, flags, the environment, the `[schema-registry]` table and the
--schema-registry-config file, merged into the sink's decoding options, checked before Spark starts, and never
showing a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_spark.app import load, stream
from kafka_spark.app.config import validate
from kafka_spark.app.source import Source, sink_settings
from kafka_spark.errors import ConfigError
from kafka_spark.formats.options import payload_options
from kafka_spark.sink.options import LoadOptions

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cr3t-Pa55-71c"
BASE = ["-b", "broker:9092", "--topic", "orders", "--table", "/lake/orders"]


def sink_options(config) -> LoadOptions:
    source = Source(dict(config.kafka), list(config.topics), None, "broker:9092", embedded=False)
    return LoadOptions(**sink_settings(config, source, "/lake/orders"))


def test_flags_become_the_sinks_decoding_options():
    config, _ = load.read_config([*BASE, "--value-format", "AVRO", "--key-format", "protobuf",
                                  "--schema-registry", "http://a:8081,http://b:8081", "--value-subject", "shop.Order",
                                  "--key-subject", "orders-key", "--schema-evolution-mode", "restart",
                                  "--merge-schema", "true", "--dead-letter", "/lake/dead"])
    validate(config)
    options = sink_options(config)
    assert (options.value_format, options.key_format, options.merge_schema) == ("avro", "protobuf", True)
    assert options.schema_registry == {"schema.registry.url": "http://a:8081,http://b:8081"}
    assert options.format_options == {"valueSubject": "shop.Order", "keySubject": "orders-key",
                                      "schemaEvolutionMode": "restart"}
    parsed = payload_options(options.decoding)
    assert parsed is not None and parsed.value is not None and parsed.key is not None
    assert (parsed.value.format, parsed.value.subject, parsed.key.format, parsed.key.subject) == (
        "avro", "shop.Order", "protobuf", "orders-key")
    assert parsed.registry.urls == ("http://a:8081", "http://b:8081")
    assert parsed.restart_on_new_schema


def test_without_a_format_nothing_decodes():
    config, _ = load.read_config(BASE)
    validate(config)
    options = sink_options(config)
    assert options.decoding == {} and options.value_format is None and not options.merge_schema


def test_registry_table_then_file_then_url_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    conf = tmp_path / "job.toml"
    conf.write_text('value-format = "avro"\ntopics = "orders"\n[schema-registry]\nurl = "http://table:8081"\n'
                    '"schema.registry.request.timeout.ms" = 5000\n"max.retries" = 1\n')
    props = tmp_path / "registry.properties"
    props.write_text(f"basic.auth.user.info=loader:{SECRET}\nschema.registry.max.retries=7\n")
    config, _ = load.read_config(["--config", str(conf), "--schema-registry-config", str(props)])
    assert config.registry == {"schema.registry.url": "http://table:8081", "schema.registry.request.timeout.ms":
                               "5000", "schema.registry.max.retries": "7",
                               "schema.registry.basic.auth.user.info": f"loader:{SECRET}"}
    parsed = payload_options(sink_options(config).decoding)
    assert parsed is not None
    assert (parsed.registry.urls, parsed.registry.timeout_ms, parsed.registry.max_retries) == (
        ("http://table:8081",), 5000, 7)
    assert (parsed.registry.username, parsed.registry.password) == ("loader", SECRET)

    # The URL of `schema-registry` (here from the environment) wins over the table's and the file's.
    monkeypatch.setenv("KAFKA_SPARK_SCHEMA_REGISTRY", "https://env:8081")
    monkeypatch.setenv("KAFKA_SPARK_VALUE_SUBJECT", "orders-v")
    config, _ = load.read_config(["--config", str(conf), "--schema-registry-config", str(props)])
    options = sink_options(config)
    assert options.schema_registry["schema.registry.url"] == "https://env:8081"
    assert options.format_options == {"valueSubject": "orders-v"}
    config, _ = load.read_config(["--config", str(conf), "--schema-registry", "http://flag:1"])
    assert sink_options(config).schema_registry["schema.registry.url"] == "http://flag:1"


def test_schema_registry_key_may_be_the_url_in_a_file(tmp_path: Path):
    conf = tmp_path / "job.toml"
    conf.write_text('key-format = "json-schema"\nschema-registry = "http://registry:8081"\n')
    config, _ = stream.read_config(["--config", str(conf), *BASE])
    validate(config)
    assert sink_options(config).decoding == {"keyFormat": "json-schema",
                                             "schema.registry.url": "http://registry:8081"}
    conf.write_text('schema-registry = ["http://registry:8081"]\n')
    with pytest.raises(ConfigError, match="schema-registry: expected the schema registry's URL"):
        load.read_config(["--config", str(conf)])


@pytest.mark.parametrize(("flags", "message"), [
    (["--value-format", "avro", "--value-schema", "id INT", "--schema-registry", "http://r:1"],
     r"value_schema \(--value-schema\) parses JSON values without a registry"),
    (["--schema-registry", "http://r:1"], r"^--schema-registry: only with --value-format or --key-format"),
    (["--value-subject", "s"], r"^--value-subject: only with --value-format"),
    (["--schema-evolution-mode", "restart"], r"^--schema-evolution-mode: only with --value-format"),
    (["--key-format", "avro", "--value-subject", "s", "--schema-registry", "http://r:1"],
     r"^--value-subject needs --value-format"),
    (["--value-format", "avro"], r"^--value-format avro needs --schema-registry \(the URL"),
    (["--value-format", "avro", "--schema-registry", "http://r:1", "--topic", "payments"],
     r"reads topics orders, payments, but decodes with one schema.*give --value-subject"),
    (["--value-format", "avro", "--schema-registry", "ftp://r:1"], r"schema.registry.url: URL number 1"),
    (["--value-format", "xml"], r"^--value-format: expected one of binary, avro, protobuf, json-schema"),
    (["--value-format", "avro", "--schema-registry", "http://r:1", "--schema-evolution-mode", "later"],
     r"^--schema-evolution-mode: expected none, restart or addNewColumns"),
    (["--dead-letter", "/lake/dead"], r"dead_letter \(--dead-letter\) needs value_schema"),
])
def test_settings_that_do_not_go_together_fail_before_spark(flags: list[str], message: str):
    with pytest.raises(ConfigError, match=message):
        validate(load.read_config([*BASE, *flags])[0])


def test_a_pattern_needs_a_subject_and_dead_letters_work_with_a_format():
    with pytest.raises(ConfigError, match=r"reads pattern '\^orders-\.\*'.*--value-subject"):
        validate(load.read_config(["-b", "b:1", "--pattern", "^orders-.*", "--table", "/t", "--value-format",
                                   "avro", "--schema-registry", "http://r:1"])[0])
    validate(load.read_config(["-b", "b:1", "--pattern", "^orders-.*", "--table", "/t", "--value-format", "avro",
                               "--schema-registry", "http://r:1", "--value-subject", "orders-value",
                               "--dead-letter", "/t-dead"])[0])


def test_unknown_registry_setting_is_named_with_a_suggestion(tmp_path: Path):
    conf = tmp_path / "job.toml"
    conf.write_text('value-format = "avro"\n[schema-registry]\nurl = "http://r:1"\n"basic.auth.userinfo" = "u:p"\n')
    with pytest.raises(ConfigError, match=r"'schema\.registry\.basic\.auth\.userinfo'; did you mean "
                                          r"'schema\.registry\.basic\.auth\.user\.info'"):
        validate(load.read_config(["--config", str(conf), *BASE])[0])
    conf.write_text('[schema-registry]\nurl = ["http://r:1"]\n')
    with pytest.raises(ConfigError, match=r"schema-registry.url: expected a string, number or boolean"):
        load.read_config(["--config", str(conf)])
    with pytest.raises(ConfigError, match="--schema-registry-config: cannot read"):
        load.read_config(["--schema-registry-config", str(tmp_path / "missing.properties")])


def test_secrets_stay_out_of_errors_and_printed_settings(tmp_path: Path):
    props = tmp_path / "registry.properties"
    props.write_text(f"url=http://loader:{SECRET}@registry:8081\nbearer.auth.token={SECRET}\n"
                     f"ssl.key.password={SECRET}\nrequest.timeout.ms=soon\n")
    config, _ = load.read_config([*BASE, "--value-format", "avro", "--schema-registry-config", str(props)])
    assert SECRET not in repr(config) and SECRET not in str(config)
    with pytest.raises(ConfigError) as failure:
        validate(config)
    assert SECRET not in str(failure.value)
    for flags in (["--schema-registry", f"ftp://u:{SECRET}@r"], ["--schema-registry", f"http://u:{SECRET}@"]):
        with pytest.raises(ConfigError) as failure:
            validate(load.read_config([*BASE, "--value-format", "avro", *flags])[0])
        assert SECRET not in str(failure.value)


def test_every_setting_is_a_flag_of_both_jobs_and_consume_speaks_the_same_names():
    from kafka_spark.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    shared = {"--value-format", "--key-format", "--schema-registry", "--schema-registry-config", "--value-subject",
              "--key-subject"}
    for name in ("load", "stream"):
        flags = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert shared | {"--schema-evolution-mode", "--merge-schema"} <= flags, name
    consume = {s for a in sub.choices["consume"]._actions for s in a.option_strings}
    assert shared | {"--skip-message-on-error"} <= consume


def test_the_avro_example_config_is_valid():
    config, _ = load.read_config(["--config", str(REPO / "conf" / "avro-orders.toml")])
    validate(config)
    options = sink_options(config)
    assert options.decoding == {"valueFormat": "avro", "schema.registry.url": "http://localhost:8081"}
    assert options.merge_schema and options.dead_letter and config.transform

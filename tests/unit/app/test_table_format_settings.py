"""The table-format settings of `kafka-spark load` / `stream` and the jobs: --table-format, the Iceberg catalog
(flags, the config file's [iceberg] table, pyiceberg's own configuration), what Iceberg refuses, and no catalog
secret in a repr, an error or a printed setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_spark.app import load, stream
from kafka_spark.app.config import validate
from kafka_spark.app.table_formats import DeltaRun, IcebergRun, run_format
from kafka_spark.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
SECRET = "s3cr3t-51-pa55"
BROKER = ["-b", "h:1", "--topic", "t"]


def iceberg(*argv: str, app=load):
    config, _ = app.read_config([*BROKER, "--table-format", "iceberg", *argv])
    validate(config)
    return config


def test_delta_is_the_default_and_iceberg_is_chosen_by_flag_file_or_environment(tmp_path, monkeypatch):
    assert isinstance(run_format(load.read_config([*BROKER, "--table", "/t"])[0]), DeltaRun)
    config = iceberg("--table", "db.events", "--iceberg-warehouse", str(tmp_path / "wh"))
    fmt = run_format(config)
    assert isinstance(fmt, IcebergRun) and fmt.summary() == {"table_format": "iceberg", "catalog": "kafka_spark"}
    assert fmt.catalog.catalog_properties() == {"type": "sql", "warehouse": str(tmp_path / "wh"),
                                                "uri": f"sqlite:///{tmp_path / 'wh'}/catalog.db"}
    assert fmt.version_label == "Iceberg sequence number" and run_format(load.LoadConfig()).version_label == \
        "Delta version"

    conf = tmp_path / "job.toml"
    conf.write_text('table-format = "Iceberg"\ntable = "lake.db.events"\niceberg-catalog = "lake"\n'
                    '[iceberg]\ntype = "rest"\nuri = "http://file:8181"\nwarehouse = "wh"\n'
                    's3.endpoint = "http://s3:9000"\n"s3.region" = "eu-west-1"\n"py-io-impl" = "x.Y"\n'
                    '"s3.force-virtual-addressing" = true\n')
    monkeypatch.setenv("KAFKA_SPARK_ICEBERG_CATALOG_URI", "http://env:8181")
    config, _ = load.read_config([*BROKER, "--config", str(conf), "--iceberg-property", "scope=catalog",
                                  "--iceberg-property", "s3.region=us-east-1"])
    validate(config)
    catalog = run_format(config).catalog
    # TOML's dotted keys are pyiceberg's dotted names; the flags over the environment over the file
    assert (catalog.name, catalog.uri, catalog.warehouse) == ("lake", "http://env:8181", "wh")
    assert dict(catalog.properties) == {"type": "rest", "s3.endpoint": "http://s3:9000", "s3.region": "us-east-1",
                                        "py-io-impl": "x.Y", "s3.force-virtual-addressing": "true",
                                        "scope": "catalog"}
    assert catalog.identifier(config.table) == ("db", "events")
    monkeypatch.setenv("KAFKA_SPARK_TABLE_FORMAT", "delta")
    assert load.read_config([*BROKER, "--config", str(conf)])[0].table_format == "delta"


def test_a_catalog_of_pyicebergs_own_configuration_is_found_by_its_name(tmp_path, monkeypatch):
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    (tmp_path / ".pyiceberg.yaml").write_text("catalog:\n  prod:\n    uri: http://yaml:8181\n"
                                              "    credential: id:secret\n")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__S3__ENDPOINT", "http://s3:9000")
    config = iceberg("--table", "db.t", "--iceberg-catalog", "prod")
    catalog = run_format(config).catalog
    assert (catalog.name, catalog.uri) == ("prod", "http://yaml:8181")
    assert dict(catalog.properties) == {"credential": "id:secret", "s3.endpoint": "http://s3:9000"}
    # the settings given win over pyiceberg's
    catalog = run_format(iceberg("--table", "db.t", "--iceberg-catalog", "prod", "--iceberg-catalog-uri",
                                 "http://flag:8181")).catalog
    assert catalog.uri == "http://flag:8181"


def test_no_catalog_is_an_error_but_the_demo_has_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))  # no .pyiceberg.yaml of the machine's
    with pytest.raises(ConfigError, match="give the Iceberg catalog: --iceberg-warehouse DIR"):
        iceberg("--table", "db.t")
    monkeypatch.chdir(tmp_path)
    config, _ = load.read_config(["--table-format", "iceberg"])
    validate(config)
    fmt = run_format(config)
    assert fmt.sample_table == "demo.page_views"
    assert fmt.catalog.warehouse == str(tmp_path / "data" / "warehouse")


@pytest.mark.parametrize(("argv", "message"), [
    (["--value-schema", "n INT", "--dead-letter", "/lake/dead"], "--dead-letter: '/lake/dead' is a path; an Iceberg"),
    (["--log-dirs", "/var/kafka"], "--log-dirs: back-fills from Kafka's log directories write Delta tables only"),
    (["--cdc", "upsert"], "--cdc: change streams are applied with Delta's MERGE"),
    (["--table", "/lake/events"], "--table: '/lake/events' is a path; an Iceberg table is named in its catalog"),
    (["--table", "s3://lake/events"], "--table: 's3://lake/events' is a path"),
    (["--table-template", "/lake/{topic}"], "--table-template: '/lake/{topic}' is a path"),
    (["--iceberg-warehouse", "s3://lake/wh"], "the embedded Iceberg catalog .SQLite. needs `warehouse` as a local"),
])
def test_what_iceberg_does_not_take_yet_is_refused_by_name(tmp_path, argv, message):
    names_a_table = "--table" in argv or "--table-template" in argv
    with pytest.raises(ConfigError, match=message):
        iceberg("--iceberg-warehouse", str(tmp_path), *([] if names_a_table else ["--table", "db.t"]), *argv)


def test_refusals_of_the_stream_and_of_a_table_per_topic(tmp_path):
    # a stream compacts its Iceberg tables (kafka_spark/iceberg/compaction.py); it vacuums Delta tables only
    assert iceberg("--table", "db.t", "--iceberg-warehouse", str(tmp_path), "--compact-every", "5",
                   app=stream).compact_every == 5
    with pytest.raises(ConfigError, match="--vacuum-retention-hours: a stream vacuums Delta tables only"):
        iceberg("--table", "db.t", "--iceberg-warehouse", str(tmp_path), "--compact-every", "5",
                "--vacuum-retention-hours", "24", app=stream)
    conf = tmp_path / "routed.toml"
    conf.write_text('table-template = "bronze.{topic}"\nvalue-schema = "n INT"\n'
                    '[topics.t]\ndead-letter = "/lake/t_dead"\n')
    with pytest.raises(ConfigError, match=r"\[topics.t\].dead-letter: '/lake/t_dead' is a path"):
        iceberg("--config", str(conf), "--iceberg-warehouse", str(tmp_path))
    conf.write_text('table-template = "bronze.{topic}"\n[tables]\nt = "/lake/t"\n')
    with pytest.raises(ConfigError, match=r"\[tables\].t: '/lake/t' is a path"):
        iceberg("--config", str(conf), "--iceberg-warehouse", str(tmp_path))
    # a table per topic by catalog name, and pyiceberg's writer asked for by name, are fine
    config = iceberg("--table-template", "bronze.{topic}", "--writer", "pyiceberg", "--iceberg-warehouse",
                     str(tmp_path), app=stream)
    assert (config.table_template, config.writer) == ("bronze.{topic}", "pyiceberg")
    # and so is a dead-letter table by catalog name, a topic's template too
    config = iceberg("--table-template", "bronze.{topic}", "--value-schema", "n INT", "--dead-letter",
                     "bronze.{topic}_dead", "--iceberg-warehouse", str(tmp_path))
    assert config.dead_letter == "bronze.{topic}_dead"


@pytest.mark.parametrize(("argv", "message"), [
    (["--iceberg-warehouse", "/wh"], "--iceberg-warehouse: only with --table-format iceberg"),
    (["--iceberg-catalog", "lake"], "--iceberg-catalog: only with --table-format iceberg"),
    (["--iceberg-property", "type=rest"], r"\[iceberg\] or --iceberg-property: only with --table-format iceberg"),
    (["--writer", "pyiceberg"], "--writer pyiceberg: only with --table-format iceberg"),
    (["--table-format", "hudi"], "--table-format: expected delta or iceberg, got 'hudi'"),
    (["--iceberg-property", "credential"], "--iceberg-property: expected KEY=VALUE"),
])
def test_iceberg_settings_need_the_iceberg_format(argv, message):
    with pytest.raises(ConfigError, match=message):
        validate(load.read_config([*BROKER, "--table", "/t", *argv])[0])


def test_catalog_secrets_are_in_no_repr_or_error(tmp_path):
    conf = tmp_path / "job.toml"
    conf.write_text(f'table-format = "iceberg"\ntable = "db.t"\n[iceberg]\nwarehouse = "{tmp_path}"\n'
                    f'credential = "client:{SECRET}"\ns3.secret-access-key = "{SECRET}"\n'
                    f'"adls.account-key" = "{SECRET}"\n"header.Authorization" = "Bearer {SECRET}"\n')
    config, _ = load.read_config([*BROKER, "--config", str(conf), "--iceberg-property", f"token={SECRET}",
                                  "--iceberg-catalog-uri", f"postgresql+psycopg2://kafka:{SECRET}@db:5432/ice"])
    validate(config)
    fmt = run_format(config)
    for shown in (repr(config), repr(fmt), repr(fmt.catalog), str(fmt.summary())):
        assert SECRET not in shown, shown
    assert "db:5432" in repr(fmt.catalog) and "[hidden]" in repr(fmt.catalog)
    # a value of the wrong type is named by its key only
    conf.write_text(f'table-format = "iceberg"\n[iceberg]\ncredential = ["{SECRET}"]\n')
    with pytest.raises(ConfigError, match=r"iceberg\.credential: expected a string") as bad:
        load.read_config(["--config", str(conf)])
    assert SECRET not in str(bad.value)


def test_the_example_config_is_an_iceberg_demo(monkeypatch, tmp_path):
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    config, _ = load.read_config(["--config", str(REPO / "conf" / "kafka-to-iceberg.toml")])
    validate(config)
    assert (config.table_format, config.table, config.iceberg_catalog, config.embedded) == (
        "iceberg", "bronze.page_views", "lake", True)
    assert run_format(config).catalog.warehouse == "data/warehouse"
    # every commented-out example key is one the applications take
    import tomllib

    text = (REPO / "conf" / "kafka-to-iceberg.toml").read_text()
    for key, value in re.findall(r"^# ([a-z-]+) = (\S.*?)\s*(?:#.*)?$", text, flags=re.M):
        if key in load.FILE_KEYS:
            load.FILE_KEYS[key][1](tomllib.loads(f"{key} = {value}")[key], key)


def test_delta_offsets_refuses_a_settings_file_of_iceberg_tables(tmp_path, capsys):
    from kafka_spark.cli.main import main

    conf = tmp_path / "ice.toml"
    conf.write_text('table-format = "iceberg"\ntable-template = "bronze.{topic}"\n')
    assert main(["delta-offsets", "--config", str(conf), *BROKER]) == 2
    assert "table-format iceberg: delta-offsets reads Delta tables" in capsys.readouterr().err


def test_iceberg_offsets_refuses_a_settings_file_of_delta_tables(tmp_path, capsys, monkeypatch):
    from kafka_spark.cli.main import main

    conf = tmp_path / "delta.toml"
    conf.write_text('table-template = "/lake/{topic}"\n')  # no table-format: the default's, Delta's
    monkeypatch.delenv("KAFKA_SPARK_TABLE_FORMAT", raising=False)
    assert main(["iceberg-offsets", "--config", str(conf), *BROKER]) == 2
    assert "table-format delta: iceberg-offsets reads Iceberg tables" in capsys.readouterr().err

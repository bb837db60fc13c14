"""The applications' settings (file, environment, flags) and the command-line vocabulary shared by every
command: new names, old spellings accepted but hidden, one parser of each value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_spark.app import load, stream
from kafka_spark.cli.main import build_parser
from kafka_spark.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def test_new_names_and_old_spellings_give_the_same_settings():
    new, _ = load.read_config(["-b", "h:1", "--topic", "a,b", "--topic", "c", "--table", "/t", "--sink-id", "s",
                               "--offset", "latest", "--group", "g", "--fail-on-data-loss", "false"])
    old, _ = load.read_config(["--bootstrap-servers", "h:1", "--topics", "a,b,c", "--table", "/t", "--sink", "s",
                               "--starting-offsets", "latest", "--publish-group", "g", "--skip-lost"])
    assert new == old
    assert (new.topics, new.publish_group, new.fail_on_data_loss) == (["a", "b", "c"], "g", False)


def test_old_spellings_are_hidden_from_help():
    text = load.build_parser().format_help() + stream.build_parser().format_help()
    for old in ("--bootstrap-servers", "--topics", "--starting-offsets", "--publish-group", "--sink ", "--skip-lost"):
        assert old not in text
    for new in ("--bootstrap-server", "--topic", "--offset", "--group", "--sink-id", "--command-config"):
        assert new in text


def test_offset_takes_a_time_but_not_a_bare_number():
    config, _ = load.read_config(["--offset", "@2024-01-01T00:00:00Z"])
    assert config.starting_offsets == "1704067200000"
    assert load.read_config(["--starting-offsets", "1704067200000"])[0].starting_offsets == "1704067200000"
    with pytest.raises(ConfigError, match="--offset: expected earliest, latest or @TIME"):
        load.read_config(["--offset", "42"])


def test_log_dirs_make_a_backfill_that_needs_no_broker_but_a_topic_and_a_table():
    from kafka_spark.app.config import validate

    config, _ = load.read_config(["--log-dirs", "/var/kafka/a,/var/kafka/b", "--topic", "t", "--table", "/t"])
    assert (config.log_dirs, config.embedded) == (["/var/kafka/a", "/var/kafka/b"], False)
    validate(config)
    with pytest.raises(ConfigError, match="give --topic"):
        validate(load.read_config(["--log-dirs", "/var/kafka/a", "--table", "/t"])[0])
    assert load.read_config(["--table", "/t"])[0].embedded


def test_file_then_environment_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    conf = tmp_path / "job.toml"
    conf.write_text('bootstrap-servers = "file:1"\ntopics = ["f"]\ntable = "/f"\nmax-records = 5\n'
                    '[kafka]\n"security.protocol" = "SSL"\n"linger.ms" = 5\n')
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    monkeypatch.setenv("KAFKA_SPARK_TABLE", "/env")
    monkeypatch.setenv("KAFKA_SPARK_MAX_RECORDS", "7")
    monkeypatch.setenv("KAFKA_SPARK_CACHE", "/not/a/setting")
    config, _ = load.read_config(["--config", str(conf), "--max-records", "9", "--command-config", str(props),
                                  "-X", "sasl.mechanism=SCRAM-SHA-512"])
    assert (config.bootstrap_servers, config.topics, config.table, config.max_records) == ("file:1", ["f"], "/env", 9)
    assert config.kafka == {"security.protocol": "SASL_SSL", "linger.ms": "5", "sasl.mechanism": "SCRAM-SHA-512"}
    monkeypatch.setenv("KAFKA_SPARK_MAX_RECORDS", "many")
    with pytest.raises(ConfigError, match="KAFKA_SPARK_MAX_RECORDS: expected a whole number, got 'many'"):
        load.read_config([])


def test_a_transform_module_is_imported_before_spark_starts():
    from kafka_spark.sink.read_plan import resolve_transform

    assert resolve_transform("SELECT * FROM kafka") == "SELECT * FROM kafka"
    assert callable(resolve_transform("json:dumps"))
    with pytest.raises(ConfigError, match="no_such_module"):
        resolve_transform("no_such_module:f")


def test_every_command_speaks_the_same_connection_options():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in ("metadata", "offsets", "groups", "produce", "consume", "delta-offsets", "zk", "load", "stream"):
        options = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert {"-b", "--bootstrap-server", "--bootstrap-servers", "--zookeeper", "--command-config", "-X",
                "--json"} <= options, name
    for name in ("metadata", "offsets", "zk", "load", "stream"):
        options = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert {"--topic", "--topics"} <= options, name


@pytest.mark.parametrize("module", ["kafka_spark", "kafka_spark.cli"])
def test_python_m_runs_the_command(module: str):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0 and "load" in proc.stdout and "stream" in proc.stdout, proc.stderr


def test_the_application_imports_without_pyspark_and_without_a_checkout():
    code = ("import sys; import kafka_spark.app.load, kafka_spark.app.stream, kafka_spark.cli.main; "
            "assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    for path in (REPO / "kafka_spark" / "app").glob("*.py"):
        text = path.read_text()
        assert ".venv" not in text and "parents[" not in text and "REPO" not in text, path


def test_the_jobs_are_thin_entry_files():
    for job in (REPO / "jobs").glob("*.py"):
        assert len(job.read_text().splitlines()) < 60, job

"""A table per topic in the applications: `table-template`, `[tables]`, `[topics.NAME]` and `on-table-error`
from the file and the flags into a `Routing`, checked before Spark starts; the output, one line per table, and
the exit status; `delta-offsets --table-template`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_spark.app import load, stream
from kafka_spark.app.config import validate
from kafka_spark.app.source import Source, sink_settings
from kafka_spark.app.table_formats import DeltaRun
from kafka_spark.cli import delta_offsets_cmd
from kafka_spark.cli.main import build_parser
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, LoadResult, MultiLoadResult, StreamOptions, TableCommitError
from kafka_spark.sink.lag import SinkLag
from kafka_spark.sink.routed import routed_tables

REPO = Path(__file__).resolve().parents[3]
BROKER = ["-b", "broker:9092"]


def options_of(config, cls: type = LoadOptions):
    source = Source(dict(config.kafka), list(config.topics), None, "broker:9092", embedded=False)
    return cls(**sink_settings(config, source, None))


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bronze.toml"
    path.write_text(text)
    return str(path)


def test_the_bronze_example_config_is_valid_for_both_jobs():
    for job in (load, stream):
        config, _ = job.read_config(["--config", str(REPO / "conf" / "bronze-layer.toml")])
        validate(config)
    options = options_of(config, StreamOptions)
    assert options.table is None and options.routing is not None
    assert (options.pattern, options.sink_id, options.routing.on_table_error) == ("^shop\\.", "bronze", "continue")
    assert options.checkpoint_location == "/lake/bronze/_kafka_spark/checkpoints/bronze"
    selected = ["shop.orders", "shop.clicks", "shop.legacy-orders", "shop.returns"]
    tables = {r.topic: r for r in routed_tables(options, selected)}
    orders, clicks = tables["shop.orders"].options, tables["shop.clicks"].options
    assert (orders.table, tuple(orders.partition_by), orders.dead_letter, orders.publish_group) == (
        "/lake/bronze/shop.orders", ("currency",), "/lake/bronze/_dead_letters/shop.orders", "bronze-shop.orders")
    assert orders.value_schema.startswith("order_id STRING")
    assert clicks.merge_schema and "raw" in str(clicks.transform) and clicks.value_schema.startswith("id STRING")
    assert tables["shop.legacy-orders"].table == "/lake/bronze/orders_v1"
    assert tables["shop.returns"].options.transform == options.transform
    events = [(r.table, r.route.value, r.options.dead_letter) for r in routed_tables(options, ["shop.events"])]
    assert events == [("/lake/bronze/events_click", "click", "/lake/bronze/_dead_letters/shop.events-click"),
                      ("/lake/bronze/events_other", None, "/lake/bronze/_dead_letters/shop.events-default"),
                      ("/lake/bronze/events_view", "view", "/lake/bronze/_dead_letters/shop.events-view")]
    assert options.routing.splits["shop.events"].header == "event-type" and options.include_headers


def test_file_then_flags_build_the_routing(tmp_path: Path):
    conf = write(tmp_path, 'bootstrap-servers = "b:1"\ntable-template = "lake.bronze.{topic}"\n'
                           '[tables]\n"a.b" = "data/special"\n[topics."a.b"]\npublish-group = "g-{topic}"\n'
                           '[topics."c-d"]\npartition-by = "x,y"\n')
    config, _ = load.read_config(["--config", conf])
    validate(config)
    options = options_of(config)
    assert list(options.topics) == ["a.b", "c-d"]  # the sections' and [tables]' topics, with no list given
    tables = {r.topic: r for r in routed_tables(options, options.topics)}
    assert tables["a.b"].table == str(tmp_path.cwd() / "data" / "special")
    assert tables["a.b"].options.publish_group == "g-a.b"
    assert tables["c-d"].table == "lake.bronze.c_d" and tuple(tables["c-d"].options.partition_by) == ("x", "y")
    assert options.routing.on_table_error == "fail-fast"

    config, _ = load.read_config(["--config", conf, "--table-template", "data/{topic}", "--on-table-error",
                                  "continue", "--topic", "a.b"])
    validate(config)
    options = options_of(config)
    assert options.routing.template == str(tmp_path.cwd() / "data") + "/{topic}"
    assert (options.routing.on_table_error, list(options.topics)) == ("continue", ["a.b"])


def test_a_topic_decoding_with_a_registry_format_of_its_own(tmp_path: Path):
    conf = write(tmp_path, 'bootstrap-servers = "b:1"\npattern = "^t"\ntable-template = "/l/{topic}"\n'
                           'schema-registry = "http://registry:8081"\n[topics.tavro]\nvalue-format = "avro"\n'
                           'value-subject = "shared-value"\n')
    config, _ = load.read_config(["--config", conf])
    validate(config)
    tables = {r.topic: r for r in routed_tables(options_of(config), ["tavro", "traw"])}
    assert tables["tavro"].options.decoding == {"valueFormat": "avro", "valueSubject": "shared-value",
                                                 "schema.registry.url": "http://registry:8081"}
    assert tables["traw"].options.decoding == {}
    # Every table decoding with its own topic's subject: no need for a shared subject.
    config, _ = load.read_config([*BROKER, "--pattern", "^t", "--table-template", "/l/{topic}", "--value-format",
                                  "avro", "--schema-registry", "http://r:1"])
    validate(config)


@pytest.mark.parametrize("text,flags,error", [
    ('table = "/t"\ntable-template = "/l/{topic}"\ntopics = ["a"]', [], "give table .* or table-template"),
    ('table-template = "/l/all"\ntopics = ["a"]', [], r"table-template: '/l/all' has no \{topic\}"),
    ('table-template = "/l/{topic}"\ntopics = ["a"]\non-table-error = "skip"', [],
     "on-table-error: expected fail-fast or continue, got 'skip'"),
    ('table-template = "/l/{topic}"\npattern = "^a"\n[topics.a]\npartition_by = ["x"]\ntransfrom = "SELECT 1"', [],
     r"topics\.a\.transfrom: unknown key; did you mean 'transform'\?"),
    ('table-template = "/l/{topic}"\npattern = "^a"\nvalue-schema = "n INT"\ndead-letter = "/dead"', [],
     r"dead-letter: a dead-letter table serves one table: give it \{topic\}"),
    ('table-template = "/l/{topic}"\npattern = "^a"\n[topics.a1]\ndead-letter = "/dead/{topic}"', [],
     r"\[topics\.a1\]: dead_letter .* needs value_schema"),
    ('table-template = "/l/{topic}"\npattern = "^a"\n[topics.a1]\nvalue-format = "avro"', [],
     r"\[topics\.a1\]: --value-format avro needs --schema-registry"),
    ('table = "/t"\ntopics = ["a"]\non-table-error = "continue"', [], "on-table-error: only with table-template"),
    ('table = "/t"\npattern = "a"\n[topics.a]\nmerge-schema = true', [], r"\[topics\.a\]: per-topic settings only"),
    ('[tables]\na = "/t/a"', ["--bootstrap-server", ""], "need a broker"),
    ('pattern = "^a"\n[topics.a.split]\nby = "key"', [], r"topics\.a\.split: give `by` .* and `tables`"),
    ('pattern = "^a"\n[topics.a.split]\nby = "key"\ntables = { x = "/t" }\nelse = "/u"', [],
     r"topics\.a\.split\.else: unknown key; a split's keys: by, tables, default"),
])
def test_routing_settings_are_refused_in_one_line_naming_the_setting(tmp_path: Path, text: str, flags: list[str],
                                                                      error: str):
    conf = write(tmp_path, ('bootstrap-servers = "b:1"\n' if not flags else "") + text + "\n")
    with pytest.raises(ConfigError, match=error) as info:
        validate(load.read_config(["--config", conf])[0])
    assert "\n" not in str(info.value)


def test_the_flags_are_in_both_jobs_and_the_vocabulary():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in ("load", "stream"):
        flags = {s for a in sub.choices[name]._actions for s in a.option_strings}
        assert {"--table-template", "--on-table-error"} <= flags
    flags = {s for a in sub.choices["delta-offsets"]._actions for s in a.option_strings}
    assert {"--table-template", "--topic", "--pattern", "--config", "--sink-id"} <= flags


def results() -> MultiLoadResult:
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    return MultiLoadResult(tables=[
        LoadResult("committed", "s", 0, rows=7, table_version=3, offsets={a: 7}, table="/l/a", topic="a"),
        LoadResult("failed", "s", None, table="/l/b", topic="b", error="BadRecordError: b [0] offset 2: not JSON"),
    ], seconds=1.0, latest={a: 9, b: 4})


def run_load(monkeypatch, capsys, argv: list[str], outcome) -> tuple[int, str, str]:
    def fake(spark, options):
        assert options.routing is not None and options.table is None
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(DeltaRun, "load_tables", lambda _self, spark, options: fake(spark, options))
    code = load.main([*BROKER, "--pattern", "^[ab]$", "--table-template", "/l/{topic}", "--sink-id", "s", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_continue_run_with_a_failed_table_prints_every_table_then_exits_1(monkeypatch, capsys):
    code, out, err = run_load(monkeypatch, capsys, ["--on-table-error", "continue"], results())
    assert code == 1
    assert "2 tables of sink 's': 1 committed, 1 failed" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("/l/a"))
    assert row == ["/l/a", "a", "committed", "7", "3", "2"]  # table, topic, status, rows, version, lag
    assert next(line.split()[:3] for line in out.splitlines() if line.strip().startswith("/l/b")) == [
        "/l/b", "b", "failed"]
    assert "total      7 rows" in out
    assert err.strip() == "kafka-to-delta: table /l/b (topic 'b') failed: BadRecordError: b [0] offset 2: not JSON"

    code, out, err = run_load(monkeypatch, capsys, ["--on-table-error", "continue", "--json"], results())
    summary = json.loads(out)
    assert code == 1 and summary["status"] == "partial" and summary["failed"] == ["/l/b"]
    assert [(t["table"], t["topic"], t["status"], t["rows"]) for t in summary["tables"]] == [
        ("/l/a", "a", "committed", 7), ("/l/b", "b", "failed", 0)]
    assert summary["tables"][0]["lag"] == 2 and summary["tables"][0]["table_version"] == 3
    assert "not JSON" in summary["tables"][1]["error"]


def test_fail_fast_names_the_table_and_exits_1(monkeypatch, capsys):
    partial = results()
    error = TableCommitError("table /l/b (topic 'b') failed while committing batch 0: BadRecordError: no",
                             "/l/b", "b", partial)
    code, out, err = run_load(monkeypatch, capsys, ["--json"], error)
    assert code == 1
    assert json.loads(out)["error"].startswith("table /l/b (topic 'b') failed")
    assert err.strip() == ("kafka-to-delta: error: table /l/b (topic 'b') failed while committing batch 0: "
                           "BadRecordError: no")

    code, out, _ = run_load(monkeypatch, capsys, [], MultiLoadResult(tables=[results().tables[0]]))
    assert code == 0 and "1 committed" in out


def test_delta_offsets_lists_every_routed_table(monkeypatch, capsys, tmp_path: Path):
    a = TopicPartition("a", 0)
    lags = {"/l/a": SinkLag("s", 2, 0, {a: 7}, {a: 9}, {a: 2}), "/l/b": None}
    seen = []

    def fake(options, conf=None):
        seen.append(options)
        return lags

    monkeypatch.setattr(delta_offsets_cmd, "tables_lag", fake)
    parser = build_parser()
    argv = ["delta-offsets", "--table-template", "/l/{topic}", "--topic", "a,b", "--sink-id", "s", *BROKER]
    args = parser.parse_args(argv)
    assert args.run(args) == 0
    out = capsys.readouterr().out
    assert seen[0].routing.template == "/l/{topic}" and list(seen[0].topics) == ["a", "b"]
    assert next(line.split() for line in out.splitlines() if "/l/a" in line)[:3] == ["/l/a", "a", "2"]
    assert "no commit yet" in next(line for line in out.splitlines() if "/l/b" in line)
    assert "total lag: 2 records" in out

    args = parser.parse_args([*argv, "--json"])
    assert args.run(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total_lag"] == 2 and report["sink"] == "s"
    assert [(t["table"], t["topic"]) for t in report["tables"]] == [("/l/a", "a"), ("/l/b", "b")]
    assert report["tables"][0]["lag"] == {"a": {"0": 2}} and report["tables"][1]["committed"] is False

    conf = write(tmp_path, 'pattern = "^x"\ntable-template = "/c/{topic}"\nsink-id = "c"\n[kafka]\n'
                           '"bootstrap.servers" = "k:1"\n')
    args = parser.parse_args(["delta-offsets", "--config", conf])
    assert args.run(args) == 0
    assert (seen[-1].pattern, seen[-1].sink_id, seen[-1].kafka["bootstrap.servers"]) == ("^x", "c", "k:1")


@pytest.mark.parametrize("argv,error", [
    (["/t", "--table-template", "/l/{topic}", "-b", "k:1"], "give a table, or --table-template"),
    (["--table-template", "/l/{topic}", "--topic", "a"], "--table-template needs --bootstrap-server"),
    (["--table-template", "/l/{topic}", "-b", "k:1"], "give --topic or --pattern"),
    (["--table-template", "/l/all", "-b", "k:1", "--topic", "a"], r"has no \{topic\}"),
    (["/t", "--topic", "a"], "--topic and --pattern only with --table-template"),
    ([], "give the table, or --table-template"),
])
def test_delta_offsets_refuses_what_names_no_tables(argv: list[str], error: str):
    args = build_parser().parse_args(["delta-offsets", *argv])
    with pytest.raises(ConfigError, match=error):
        args.run(args)


def test_a_failed_tables_topic_is_read_back_from_its_name():
    from kafka_spark.app.routed_run import template_topic
    from kafka_spark.sink import Routing

    by_path = Routing(template="/l/{topic}/data", tables={"odd": "/elsewhere"})
    assert template_topic(by_path, "/l/x.y-z/data") == "x.y-z"
    assert template_topic(by_path, "/elsewhere") == "odd"
    assert template_topic(by_path, "/m/x/data") is None
    assert template_topic(Routing(template="bronze.{topic}"), "bronze.x_y") is None  # '.' and '_' are one now


def test_a_change_stream_per_source_table_has_its_own_key_columns(tmp_path: Path):
    conf = write(tmp_path, 'bootstrap-servers = "b:1"\ntable-template = "data/{topic}"\ncdc = "upsert"\n'
                           'key-columns = ["id"]\n[topics.orders]\nkey-columns = "order_id,line"\n[topics.users]\n')
    config, _ = load.read_config(["--config", conf])
    validate(config)
    options = options_of(config)
    tables = {r.topic: r.options for r in routed_tables(options, options.topics)}
    assert tables["orders"].key_columns == ("order_id", "line")
    assert tuple(tables["users"].key_columns) == ("id",)
    assert tables["orders"].changes is not None and tables["orders"].changes.key_columns == ("order_id", "line")

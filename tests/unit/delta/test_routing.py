"""Routing topics to tables: template and map, catalog-name mapping, collisions, per-topic settings."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions, Routing, Split, StreamOptions, TableSettings
from kafka_spark.sink.routed import routed_tables, selection
from kafka_spark.sink.table_names import is_table_name

KAFKA = {"bootstrap.servers": "h:9092"}


@pytest.mark.parametrize(("template", "topic", "table"), [
    ("/lake/bronze/{topic}", "orders.v1-eu", "/lake/bronze/orders.v1-eu"),
    ("s3a://lake/bronze/{topic}", "Orders_2", "s3a://lake/bronze/Orders_2"),
    ("bronze.{topic}", "orders.v1-eu", "bronze.orders_v1_eu"),
    ("main.bronze.raw_{topic}", "a-b", "main.bronze.raw_a_b"),
    ("bronze.{topic}", "2024-events", "bronze.`2024_events`"),
])
def test_a_template_takes_the_topic_as_is_in_paths_and_as_name_characters_in_catalog_names(template, topic, table):
    assert Routing(template=template).table_for(topic) == table
    if not table.startswith(("/", "s3a:")):
        assert is_table_name(table)


def test_the_map_wins_over_the_template_and_a_topic_with_neither_is_refused():
    routing = Routing(template="/t/{topic}", tables={"a": "/special/a"})
    assert routing.tables_for(["a", "b"]) == {"a": "/special/a", "b": "/t/b"}
    with pytest.raises(ConfigError, match="topic 'c' is selected but routed to no table"):
        Routing(tables={"a": "/x"}).table_for("c")


@pytest.mark.parametrize("topics", [["orders-eu", "orders.eu"], ["Orders", "orders"]])
def test_two_topics_one_catalog_table_is_refused_naming_both(topics):
    with pytest.raises(ConfigError, match=f"topics '{topics[0]}' and '{topics[1]}' both go to the table"):
        Routing(template="bronze.{topic}").tables_for(topics)


def test_paths_keep_apart_names_that_differ_by_more_than_case():
    assert Routing(template="/lake/{topic}").tables_for(["orders-eu", "orders.eu"]) == {
        "orders-eu": "/lake/orders-eu", "orders.eu": "/lake/orders.eu"}


@pytest.mark.parametrize("routing", [
    Routing(template="/lake/bronze/{topic}"),
    Routing(template="s3a://lake/bronze/{topic}"),
    Routing(tables={"Orders": "/lake/bronze/Orders", "orders": "/lake/bronze/orders/"}),
    Routing(template="/lake/bronze/{topic}", tables={"orders": "/lake/bronze/ORDERS"}),
])
def test_two_paths_that_differ_only_in_case_are_refused_naming_both_topics_and_the_table(routing):
    # One table on a case-insensitive store: the two sinks would share its sink id and run id.
    with pytest.raises(ConfigError, match=r"topics 'Orders' and 'orders' both go to the table \S+/(orders|ORDERS)/? "
                                          r"\(\S+/Orders and \S+/(orders|ORDERS)/? differ only in case: one table on a "
                                          r"case-insensitive store"):
        routing.tables_for(["Orders", "orders"])
    with pytest.raises(ConfigError, match="topics 'Orders' and 'orders' both go to the table"):
        routed_tables(LoadOptions(kafka=KAFKA, topics=["Orders", "orders"], routing=routing), ["Orders", "orders"])


def test_split_and_dead_letter_tables_that_differ_only_in_case_are_refused():
    with pytest.raises(ConfigError, match="both go to the table /lake/Events"):
        Routing(template="/lake/{topic}", splits={"x": Split(by="key", tables={"a": "/lake/Events"})}
                ).routes_for(["events", "x"])
    options = LoadOptions(kafka=KAFKA, topics=["A", "a"], routing=Routing(tables={"A": "/t/A", "a": "/t/b"}),
                          value_schema="n INT", dead_letter="/dead/{topic}")
    with pytest.raises(ConfigError, match=r"both go to the dead-letter table /dead/a .*differ only in case"):
        routed_tables(options, ["A", "a"])


def test_bad_routings_are_refused():
    with pytest.raises(ConfigError, match="template with"):
        Routing()
    with pytest.raises(ConfigError, match=r"has no \{topic\}"):
        Routing(template="/lake/all")
    with pytest.raises(ConfigError, match="on_table_error 'skip'"):
        Routing(template="/t/{topic}", on_table_error="skip")
    with pytest.raises(ConfigError, match="not both"):
        LoadOptions(table="/t", kafka=KAFKA, routing=Routing(template="/t/{topic}"))
    with pytest.raises(ConfigError, match="give the table"):
        LoadOptions(kafka=KAFKA)
    with pytest.raises(ConfigError, match="one target per table"):
        _ = LoadOptions(kafka=KAFKA, routing=Routing(template="/t/{topic}")).target


def test_each_table_gets_the_defaults_with_the_topic_s_overrides():
    routing = Routing(template="/lake/{topic}", overrides={
        "b": TableSettings(value_schema="n INT", dead_letter="/dead/b-only", merge_schema=True,
                           partition_by=["partition"], value_format="avro", format_options={"valueSubject": "s"}),
    })
    options = LoadOptions(kafka=KAFKA, topics=["a", "b"], sink_id="s", routing=routing, transform="SELECT 1",
                          dead_letter="/dead/{topic}", publish_group="g-{topic}", value_schema="x STRING")
    tables = {r.topic: r for r in routed_tables(options, ["a", "b"])}
    a, b = tables["a"].options, tables["b"].options
    assert (a.table, a.topics, a.pattern, a.routing, a.sink_id) == ("/lake/a", ["a"], None, None, "s")
    assert (a.transform, a.value_schema, a.dead_letter, a.publish_group) == ("SELECT 1", "x STRING", "/dead/a", "g-a")
    assert not a.merge_schema and not tables["a"].decoded
    assert (b.value_schema, b.dead_letter, b.merge_schema, b.partition_by) == ("n INT", "/dead/b-only", True,
                                                                               ("partition",))
    assert tables["b"].decoded and b.decoding["valueSubject"] == "s" and b.transform == "SELECT 1"


def test_one_dead_letter_table_for_two_tables_is_refused():
    options = LoadOptions(kafka=KAFKA, topics=["a", "b"], routing=Routing(template="/lake/{topic}"),
                          value_schema="n INT", dead_letter="/dead")
    with pytest.raises(ConfigError, match="both go to the dead-letter table /dead"):
        routed_tables(options, ["a", "b"])


def test_selection_and_the_routed_stream_s_checkpoint():
    by_map = LoadOptions(kafka=KAFKA, routing=Routing(tables={"b": "/x/b", "a": "/x/a"}))
    assert selection(by_map) == (["a", "b"], None)
    by_pattern = LoadOptions(kafka=KAFKA, pattern="ev.*", routing=Routing(template="/x/{topic}"))
    assert selection(by_pattern) == ([], "ev.*")
    with pytest.raises(ConfigError, match="give the topics or a topic pattern"):
        selection(LoadOptions(kafka=KAFKA, routing=Routing(template="/x/{topic}")))
    stream = StreamOptions(kafka=KAFKA, pattern="ev.*", sink_id="s", routing=Routing(template="/lake/bronze/{topic}/"))
    assert stream.checkpoint_location == "/lake/bronze/_kafka_spark/checkpoints/s"
    with pytest.raises(ConfigError, match="needs `checkpoint`"):
        _ = StreamOptions(kafka=KAFKA, pattern="e", routing=Routing(template="bronze.{topic}")).checkpoint_location
    with pytest.raises(ConfigError, match="not in its last part"):
        _ = StreamOptions(kafka=KAFKA, pattern="e", routing=Routing(template="/l/{topic}/t")).checkpoint_location


def test_a_batchs_commits_run_side_by_side_and_report_in_order():
    import threading
    import time
    from types import SimpleNamespace

    from kafka_spark.sink.commits import COMMIT_THREADS, run_commits

    spark = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=None, _jsc=None))  # not pinned: no properties
    lock, running, peak, finished = threading.Lock(), [0], [0], []

    def commit(i: int):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
            finished.append(i)
        if i in (3, 7):
            raise ValueError(f"table {i}")
        return i

    outcomes = run_commits(spark, [lambda i=i: commit(i) for i in range(12)])
    assert sorted(finished) == list(range(12))  # every commit finished, those after a failing one included
    assert 1 < peak[0] <= COMMIT_THREADS
    assert [o if isinstance(o, int) else str(o) for o in outcomes] == [0, 1, 2, "table 3", 4, 5, 6, "table 7",
                                                                        8, 9, 10, 11]
    assert run_commits(spark, []) == [] and run_commits(spark, [lambda: 1]) == [1]


def test_a_split_topic_goes_to_a_table_per_value_and_a_default():
    split = Split(by="header:event-type", tables={"click": "/lake/clicks", "view": "/lake/{topic}-views"},
                  default="/lake/{topic}-other")
    routing = Routing(template="/lake/{topic}", splits={"events": split})
    options = LoadOptions(kafka=KAFKA, topics=["events", "plain"], routing=routing, sink_id="s",
                          value_schema="n INT", dead_letter="/dead/{topic}-{split}")
    tables = routed_tables(options, ["events", "plain"])
    assert [(r.topic, r.table, r.route.value) for r in tables] == [
        ("events", "/lake/clicks", "click"), ("events", "/lake/events-other", None),
        ("events", "/lake/events-views", "view"), ("plain", "/lake/plain", None)]
    assert [r.options.dead_letter for r in tables] == ["/dead/events-click", "/dead/events-default",
                                                       "/dead/events-view", "/dead/plain-"]
    assert all(r.options.topics == [r.topic] for r in tables)
    assert split.header == "event-type"
    assert split.value_sql() == ("CAST(try_element_at(filter(headers, h -> h.key = 'event-type'), -1).value "
                                 "AS STRING)")
    assert split.selects_sql("click") == f"({split.value_sql()}) <=> 'click'"
    assert split.selects_sql(None) == f"NOT coalesce(({split.value_sql()}) IN ('click', 'view'), false)"
    by_value = Split(by="get_json_object(CAST(value AS STRING), '$.type')", tables={"it's": "/t"})
    assert by_value.header is None
    assert by_value.selects_sql("it's") == ("(CAST((get_json_object(CAST(value AS STRING), '$.type')) AS STRING)) "
                                            "<=> 'it\\'s'")


def test_split_tables_are_refused_when_they_collide_or_say_nothing():
    with pytest.raises(ConfigError, match="both go to the table /lake/events"):
        Routing(template="/lake/{topic}", splits={"x": Split(by="key", tables={"a": "/lake/events"})}
                ).routes_for(["events", "x"])
    with pytest.raises(ConfigError, match="give the table of each value"):
        Split(by="key", tables={})
    with pytest.raises(ConfigError, match="header:NAME"):
        Split(by="header:", tables={"a": "/t"})
    options = LoadOptions(kafka=KAFKA, topics=["e"], routing=Routing(splits={"e": Split(
        by="key", tables={"a": "/t/a", "b": "/t/b"})}), value_schema="n INT", dead_letter="/dead")
    with pytest.raises(ConfigError, match="both go to the dead-letter table /dead"):
        routed_tables(options, ["e"])

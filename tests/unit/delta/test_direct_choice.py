"""Which writer a load gets, from its options alone (the table's features: tests/integration/delta)."""

from __future__ import annotations

import json

import pytest

from kafka_spark.delta.writer_choice import choose_writer, direct_writer_reason, rows_schema
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions


def options(**kw) -> LoadOptions:
    return LoadOptions(**{"table": "/lake/events", "kafka": {"bootstrap.servers": "b:9092"}, "topics": ["t"], **kw})


@pytest.mark.parametrize(("kw", "named"), [
    ({"table": "lake.events"}, "catalog"),
    ({"transform": "SELECT * FROM kafka"}, "transform"),
    ({"value_schema": "n INT"}, "value_schema"),
    ({"value_schema": "n INT", "dead_letter": "/lake/dead"}, "value_schema"),
])
def test_options_that_need_spark_sql_or_a_catalog_name_the_reason(kw, named):
    assert named in direct_writer_reason(None, options(**kw))


def struct_json(*fields: tuple[str, object]) -> str:
    return json.dumps({"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                                    for n, t in fields]})


def test_json_parsed_values_are_the_direct_writers_unless_a_type_needs_spark():
    parsed = struct_json(("n", "integer"), ("tags", {"type": "array", "elementType": "string", "containsNull": True}))
    for kw in ({"value_schema": "n INT, tags ARRAY<STRING>"},
               {"value_schema": "n INT, tags ARRAY<STRING>", "dead_letter": "/lake/dead"}):
        opts = options(**kw)
        rows = rows_schema(opts.source, parsed)
        assert direct_writer_reason(None, opts, rows, parsed=parsed) is None
        assert json.loads(rows)["fields"][-1] == {"name": "data", "type": json.loads(parsed), "nullable": True,
                                                  "metadata": {}}
    stamped = struct_json(("n", "integer"), ("at", "timestamp"))
    opts = options(value_schema="n INT, at TIMESTAMP")
    assert direct_writer_reason(None, opts, rows_schema(opts.source, stamped), parsed=stamped) == (
        "value_schema is parsed by Spark's from_json, since field at is TIMESTAMP")


def test_a_new_path_table_of_raw_records_is_the_direct_writers():
    assert direct_writer_reason(None, options(), rows_schema(options().source)) is None
    assert '"name":"headers"' in rows_schema(options(include_headers=True).source)


def test_the_writer_is_checked_and_spark_needs_no_table():
    assert choose_writer(None, options(writer="spark"), None).writer == "spark"
    assert options().writer == "auto"
    with pytest.raises(ConfigError, match="expected one of auto, spark, direct"):
        choose_writer(None, options(writer="fast"), None)
    with pytest.raises(ConfigError, match=r"writer .direct. cannot write to lake\.events: a new catalog table"):
        choose_writer(None, options(table="lake.events", writer="direct"), None)
    auto = choose_writer(None, options(table="lake.events", writer="auto"), None)
    assert auto.writer == "spark" and "catalog" in auto.reason


@pytest.mark.parametrize("columns", [["partition"], ["topic", "partition"], ["key"], ["timestamp"]])
def test_a_new_table_partitioned_by_top_level_columns_is_the_direct_writers(columns):
    assert direct_writer_reason(None, options(partition_by=columns), rows_schema(options().source)) is None


@pytest.mark.parametrize(("kw", "columns", "named"), [
    ({}, ["value.n"], "partition column value.n is a nested field"),
    ({}, ["Partition"], "partition column Partition is not a column of the rows"),
    ({"include_headers": True}, ["headers"], "partition column headers is of type array"),
    ({}, ["topic", "topic"], "names a column twice"),
    ({}, ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"], "every column"),
])
def test_partitionings_the_direct_writer_leaves_to_spark_name_the_reason(kw, columns, named):
    opts = options(partition_by=columns, **kw)
    assert named in direct_writer_reason(None, opts, rows_schema(opts.source))


def test_a_timestamp_partition_needs_a_session_time_zone_known_here():
    opts = options(partition_by=["timestamp"])
    assert "time zone 'Mars/Base'" in direct_writer_reason(None, opts, rows_schema(opts.source), None, "Mars/Base")
    assert direct_writer_reason(None, opts, rows_schema(opts.source), None, "America/New_York") is None


def test_existing_partitioned_tables_and_partition_by(tmp_path):
    from deltalake import DeltaTable, Schema

    from kafka_spark.delta.writer_choice import DirectTarget

    rows = rows_schema(options().source)
    table = DeltaTable.create(str(tmp_path), Schema.from_json(rows), partition_by=["topic", "partition"])
    assert direct_writer_reason(table, options(), rows) is None
    assert direct_writer_reason(table, options(partition_by=["topic", "partition"]), rows) is None
    assert "partition_by (partition) differs from the table's partitioning (topic, partition)" in (
        direct_writer_reason(table, options(partition_by=["partition"]), rows))
    assert DirectTarget(None, None, rows).partition_columns == ()  # type: ignore[arg-type]
    from kafka_spark.delta.location import path_location

    target = choose_writer(None, options(table=str(tmp_path)), path_location(str(tmp_path))).target
    assert target is not None and (target.partition_columns, target.time_zone) == (("topic", "partition"), "UTC")

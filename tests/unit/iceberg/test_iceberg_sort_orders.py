"""`sort_by` for Iceberg tables: the entries parsed, the orders built for the sink's rows, an existing table's
order kept, rows put in an order (nulls and directions per field), and the setting refused for Delta tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.catalog import optional_schema
from kafka_spark.iceberg.partitions import PartitionEntry, iceberg_schema
from kafka_spark.iceberg.sort_orders import (
    SortEntry,
    check_table_order,
    parse_sort_by,
    parse_sort_entry,
    sort_order,
    sorted_rows,
    spelled_order,
)
from kafka_spark.records import kafka_schema
from kafka_spark.sink import LoadOptions, Routing
from kafka_spark.sink.routing import TableSettings


def sink_schema():
    return iceberg_schema(optional_schema(kafka_schema(True)))


@pytest.mark.parametrize(("entry", "parsed"), [
    ("key", SortEntry(PartitionEntry("identity", "key"))),
    ("timestamp desc", SortEntry(PartitionEntry("identity", "timestamp"), descending=True, nulls_first=False)),
    ("  offset  ASC ", SortEntry(PartitionEntry("identity", "offset"))),
    ("key DESC NULLS FIRST", SortEntry(PartitionEntry("identity", "key"), descending=True, nulls_first=True)),
    ("key nulls last", SortEntry(PartitionEntry("identity", "key"), nulls_first=False)),
    ("bucket(16, key) desc", SortEntry(PartitionEntry("bucket", "key", 16), descending=True, nulls_first=False)),
    ("`time stamp` asc nulls last", SortEntry(PartitionEntry("identity", "time stamp"), nulls_first=False)),
    ("days(timestamp)", SortEntry(PartitionEntry("day", "timestamp"))),
])
def test_entries_parse_with_icebergs_default_null_orders(entry, parsed):
    assert parse_sort_entry(entry) == parsed


@pytest.mark.parametrize(("entry", "why"), [
    ("", "neither a column nor a transform of one"),
    ("key sideways", "neither a column nor a transform of one"),
    ("week(timestamp) desc", "unknown transform week"),
    ("bucket(key)", "bucket takes a count first"),
])
def test_bad_entries_are_refused_naming_them(entry, why):
    with pytest.raises(ConfigError, match=rf"sort_by entry .*: {why}.*; accepted: a column or a transform"):
        parse_sort_entry(entry)


def test_an_expression_sorted_twice_is_refused():
    with pytest.raises(ConfigError, match="sort_by: key is sorted twice"):
        parse_sort_by(["key", "offset", "key desc"])
    assert [str(e) for e in parse_sort_by("key")] == ["key ASC NULLS FIRST"]


def test_the_order_of_the_sinks_rows_and_its_spelling():
    schema = sink_schema()
    order = sort_order(schema, ["key", "timestamp desc", "truncate(4, topic) asc nulls last"])
    assert order.fields == [
        SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.ASC,
                  null_order=NullOrder.NULLS_FIRST),
        SortField(source_id=6, transform=IdentityTransform(), direction=SortDirection.DESC,
                  null_order=NullOrder.NULLS_LAST),
        SortField(source_id=3, transform=TruncateTransform(4), direction=SortDirection.ASC,
                  null_order=NullOrder.NULLS_LAST)]
    assert spelled_order(order, schema) == ["key ASC NULLS FIRST", "timestamp DESC NULLS LAST",
                                            "truncate(4, topic) ASC NULLS LAST"]
    assert sort_order(schema, []) == UNSORTED_SORT_ORDER


@pytest.mark.parametrize(("entry", "why"), [
    ("nope", "nope is not a column of the rows"),
    ("headers", "identity does not sort column headers of type list"),
    ("day(topic)", "day does not sort column topic of type string"),
])
def test_columns_the_rows_lack_or_cannot_sort_by_are_refused(entry, why):
    with pytest.raises(ConfigError, match=rf"sort_by entry .*: {why}"):
        sort_order(sink_schema(), [entry])


def test_an_existing_tables_order_is_kept():
    schema = sink_schema()
    order = sort_order(schema, ["key", "offset desc"])
    check_table_order(order, schema, [], "db.t")  # none given: the table's order
    check_table_order(order, schema, ["key asc nulls first", "identity(offset) DESC"], "db.t")
    with pytest.raises(ConfigError, match=r"sort_by \(key DESC NULLS LAST\) differs from the sort order of the "
                                          r"existing table db\.t \(key ASC NULLS FIRST, offset DESC NULLS LAST\)"):
        check_table_order(order, schema, ["key desc"], "db.t")
    with pytest.raises(ConfigError, match=r"existing table db\.t \(unsorted\)"):
        check_table_order(UNSORTED_SORT_ORDER, schema, ["key"], "db.t")


def test_rows_are_sorted_field_by_field_each_with_its_null_order():
    schema = iceberg_schema(optional_schema(pa.schema([("k", pa.string()), ("n", pa.int64()), ("i", pa.int32())])))
    rows = pa.table({"k": ["b", None, "a", "b", None, "a"], "n": [1, 2, None, 3, 4, 5], "i": list(range(6))})

    def order_of(*fields: SortField) -> list[int]:
        return sorted_rows(rows, SortOrder(*fields), schema).column("i").to_pylist()

    k_asc = SortField(source_id=1, direction=SortDirection.ASC, null_order=NullOrder.NULLS_FIRST)
    n_desc = SortField(source_id=2, direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST)
    assert order_of(k_asc, n_desc) == [4, 1, 5, 2, 3, 0]
    k_desc_nulls_first = SortField(source_id=1, direction=SortDirection.DESC, null_order=NullOrder.NULLS_FIRST)
    n_asc_nulls_last = SortField(source_id=2, direction=SortDirection.ASC, null_order=NullOrder.NULLS_LAST)
    assert order_of(k_desc_nulls_first, n_asc_nulls_last) == [1, 4, 0, 3, 5, 2]
    assert order_of(k_asc) == [1, 4, 2, 5, 0, 3]  # ties keep the rows' order
    # a batch too, and a field on a column the rows lack orders nothing
    batch = rows.to_batches()[0]
    assert sorted_rows(batch, SortOrder(SortField(source_id=99), n_desc), schema).column("i").to_pylist() == [
        5, 4, 3, 1, 0, 2]
    assert sorted_rows(rows, UNSORTED_SORT_ORDER, schema) is rows


def test_rows_sort_by_a_transform_and_a_nested_field():
    arrow = pa.schema([("s", pa.struct([("x", pa.int64())])), ("key", pa.binary()), ("i", pa.int32())])
    schema = iceberg_schema(optional_schema(arrow))
    rows = pa.table({"s": [{"x": 3}, {"x": 1}, None, {"x": 2}], "key": [b"a", b"b", b"c", b"d"], "i": [0, 1, 2, 3]},
                    schema=arrow)
    x = schema.find_field("s.x").field_id
    nested = SortOrder(SortField(source_id=x, direction=SortDirection.DESC, null_order=NullOrder.NULLS_LAST))
    assert sorted_rows(rows, nested, schema).column("i").to_pylist() == [0, 3, 1, 2]
    bucketed = SortOrder(SortField(source_id=schema.find_field("key").field_id, transform=BucketTransform(4)),
                         SortField(source_id=schema.find_field("i").field_id, direction=SortDirection.DESC))
    buckets = BucketTransform(4).pyarrow_transform(schema.find_field("key").field_type)(rows.column("key"))
    expected = sorted(range(4), key=lambda i: (buckets[i].as_py(), -i))
    assert sorted_rows(rows, bucketed, schema).column("i").to_pylist() == expected


def test_sort_by_is_refused_for_delta_tables():
    from kafka_spark.delta.backend import DELTA

    with pytest.raises(ConfigError, match=r"sort_by \(key\): sort_by applies to Iceberg tables"):
        DELTA.check(None, LoadOptions(table="/lake/t", topics=["t"], sort_by=["key"]))
    with pytest.raises(ConfigError, match=r"sort_by \(key desc\): sort_by applies to Iceberg tables"):
        DELTA.check(None, LoadOptions(table="/lake/t", topics=["t"], sort_by="key desc"))


def test_sort_by_settings_flags_and_routing(tmp_path: Path):
    from kafka_spark.app import load
    from kafka_spark.app.source import Source, sink_settings
    from kafka_spark.sink.routed import routed_tables

    conf = tmp_path / "load.toml"
    conf.write_text('bootstrap-servers = "b:1"\ntable-template = "db.{topic}"\nsort-by = "key, bucket(4, key) desc"\n'
                    '[topics.b]\nsort-by = ["offset desc"]\n')
    config, _ = load.read_config(["--config", str(conf), "--topic", "a", "--topic", "b"])
    assert config.sort_by == ["key", "bucket(4, key) desc"]
    source = Source(dict(config.kafka), list(config.topics), None, "b:1", embedded=False)
    options = LoadOptions(**sink_settings(config, source, None))
    tables = {r.topic: r.options for r in routed_tables(options, ["a", "b"])}
    assert tuple(tables["a"].format.sort_by) == ("key", "bucket(4, key) desc")
    assert tables["b"].format.sort_by == ("offset desc",)
    flagged, _ = load.read_config(["-b", "b:1", "--topic", "a", "--table", "db.a", "--sort-by", "key,offset desc"])
    assert flagged.sort_by == ["key", "offset desc"]
    routed = LoadOptions(topics=["a"], routing=Routing(template="db.{topic}",
                                                       overrides={"a": TableSettings(sort_by=["timestamp"])}))
    assert routed_tables(routed, ["a"])[0].options.sort_by == ("timestamp",)

"""`partition_by` for Iceberg tables: the entries parsed (columns and Iceberg's transforms), the specs built for
the sink's rows, an existing table's spec kept, and transforms refused for Delta tables."""

from __future__ import annotations

import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import IcebergCatalog, IcebergFormat
from kafka_spark.iceberg.catalog import optional_schema
from kafka_spark.iceberg.partitions import (
    PartitionEntry,
    check_table_spec,
    iceberg_schema,
    parse_entry,
    parse_partitions,
    partition_spec,
    spelled,
)
from kafka_spark.records import kafka_schema
from kafka_spark.sink import LoadOptions

# The sink's rows: Spark's Kafka columns with the headers, their field ids as a new table numbers them.
IDS = {"key": 1, "value": 2, "topic": 3, "partition": 4, "offset": 5, "timestamp": 6, "timestampType": 7,
       "headers": 8}


def sink_schema():
    return iceberg_schema(optional_schema(kafka_schema(True)))


@pytest.mark.parametrize(("entry", "parsed"), [
    ("partition", PartitionEntry("identity", "partition")),
    ("  topic ", PartitionEntry("identity", "topic")),
    ("`timestampType`", PartitionEntry("identity", "timestampType")),
    ("identity(partition)", PartitionEntry("identity", "partition")),
    ("year(timestamp)", PartitionEntry("year", "timestamp")),
    ("month(timestamp)", PartitionEntry("month", "timestamp")),
    ("day(timestamp)", PartitionEntry("day", "timestamp")),
    ("hour(timestamp)", PartitionEntry("hour", "timestamp")),
    ("bucket(16, key)", PartitionEntry("bucket", "key", 16)),
    ("truncate(4, topic)", PartitionEntry("truncate", "topic", 4)),
    # spacing and case as Spark's DDL takes them, and Spark's plural time transforms
    ("DAY ( timestamp )", PartitionEntry("day", "timestamp")),
    ("Bucket(16,key)", PartitionEntry("bucket", "key", 16)),
    (" truncate( 4 ,`topic` ) ", PartitionEntry("truncate", "topic", 4)),
    ("days(timestamp)", PartitionEntry("day", "timestamp")),
    ("HOURS(timestamp)", PartitionEntry("hour", "timestamp")),
    ("years(timestamp)", PartitionEntry("year", "timestamp")),
    ("months(timestamp)", PartitionEntry("month", "timestamp")),
])
def test_every_transform_parses(entry, parsed):
    assert parse_entry(entry) == parsed
    # spelled back as Iceberg's Spark DDL writes it
    assert parse_entry(str(parsed)) == parsed


@pytest.mark.parametrize(("entry", "why"), [
    ("week(timestamp)", "unknown transform week"),
    ("bucket(0, key)", "bucket count must be at least 1, got 0"),
    ("bucket(-3, key)", "bucket count must be at least 1, got -3"),
    ("truncate(0, topic)", "truncate width must be at least 1, got 0"),
    ("bucket(key)", r"bucket takes a count first: bucket\(N, c\)"),
    ("truncate(topic)", r"truncate takes a width first"),
    ("day(4, timestamp)", r"day takes the column alone: day\(c\)"),
    ("day(timestamp", "neither a column nor a transform"),
    ("day()", "neither a column nor a transform"),
    ("bucket(1.5, key)", "neither a column nor a transform"),
    ("", "neither a column nor a transform"),
    ("two columns", "neither a column nor a transform"),
])
def test_bad_entries_are_refused_naming_them_and_what_is_accepted(entry, why):
    with pytest.raises(ConfigError, match=why) as refused:
        parse_entry(entry)
    assert f"partition_by entry {entry!r}" in str(refused.value)
    assert r"accepted: a column, identity(c), year(c), month(c), day(c), hour(c), bucket(N, c) or truncate(W, c)" \
        in str(refused.value)


def test_a_field_name_twice_or_a_column_partitioned_twice_is_refused():
    with pytest.raises(ConfigError, match=r"bucket.4, key. and bucket.8, key. are both the partition field key_bucket"):
        parse_partitions(["bucket(4, key)", "bucket(8, key)"])
    with pytest.raises(ConfigError, match="both the partition field partition"):
        parse_partitions(["partition", "identity(partition)"])
    with pytest.raises(ConfigError, match="partition the column timestamp twice"):
        parse_partitions(["day(timestamp)", "hour(timestamp)"])
    assert parse_partitions("day(timestamp)") == [PartitionEntry("day", "timestamp")]
    assert parse_partitions([]) == []


def test_the_spec_of_the_sinks_rows():
    schema = sink_schema()
    assert {f.name: f.field_id for f in schema.fields} == IDS
    spec = partition_spec(schema, ["day(timestamp)", "bucket(16, key)", "truncate(4, topic)", "identity(partition)"])
    assert spec == PartitionSpec(
        PartitionField(source_id=6, field_id=1000, transform=DayTransform(), name="timestamp_day"),
        PartitionField(source_id=1, field_id=1001, transform=BucketTransform(16), name="key_bucket"),
        PartitionField(source_id=3, field_id=1002, transform=TruncateTransform(4), name="topic_trunc"),
        PartitionField(source_id=4, field_id=1003, transform=IdentityTransform(), name="partition"))
    assert spelled(spec, schema) == ["day(timestamp)", "bucket(16, key)", "truncate(4, topic)", "partition"]
    for entry, transform, name in [("year(timestamp)", YearTransform(), "timestamp_year"),
                                   ("month(timestamp)", MonthTransform(), "timestamp_month"),
                                   ("hour(timestamp)", HourTransform(), "timestamp_hour"),
                                   ("bucket(4, offset)", BucketTransform(4), "offset_bucket"),
                                   ("truncate(10, value)", TruncateTransform(10), "value_trunc"),
                                   ("timestampType", IdentityTransform(), "timestampType")]:
        (field,) = partition_spec(schema, [entry]).fields
        assert (field.source_id, field.field_id, field.transform, field.name) == (
            IDS[entry.split(", ")[-1].split("(")[-1].rstrip(")")], 1000, transform, name)
    assert partition_spec(schema, []).is_unpartitioned()


@pytest.mark.parametrize(("entry", "why"), [
    ("day(topic)", r"day does not take column topic of type string \(day takes date, timestamp, timestamptz\)"),
    ("hour(partition)", "hour does not take column partition of type int"),
    ("truncate(4, timestamp)", "truncate does not take column timestamp of type timestamptz"),
    ("headers", r"identity does not take column headers of type list<.*> \(identity takes any primitive type\)"),
    ("bucket(4, headers)", "bucket does not take column headers"),
    ("day(ts)", r"ts is not a column of the rows \(key, value, topic, partition, offset, timestamp, timestampType, "
                r"headers\)"),
    ("Partition", "Partition is not a column of the rows"),
])
def test_columns_the_rows_lack_or_types_a_transform_does_not_take_are_refused(entry, why):
    with pytest.raises(ConfigError, match=why):
        partition_spec(sink_schema(), [entry])


def test_an_existing_tables_spec_is_kept():
    schema = sink_schema()
    spec = partition_spec(schema, ["day(timestamp)", "bucket(4, partition)"])
    for same in ([], ["day(timestamp)", "bucket(4, partition)"], ["DAYS( timestamp )", "bucket(4,partition)"]):
        check_table_spec(spec, schema, same, "db.t")
    for other in (["partition"], ["bucket(4, partition)", "day(timestamp)"], ["day(timestamp)", "bucket(8, partition)"],
                  ["hour(timestamp)", "bucket(4, partition)"]):
        with pytest.raises(ConfigError, match=r"partition_by \(.*\) differs from the partitioning of the existing "
                                              r"table db.t \(day\(timestamp\), bucket\(4, partition\)\): a table "
                                              "keeps its own spec; give partition_by as that spec, or none"):
            check_table_spec(spec, schema, other, "db.t")
    unpartitioned = partition_spec(schema, [])
    with pytest.raises(ConfigError, match=r"existing table db.t \(none\)"):
        check_table_spec(unpartitioned, schema, ["partition"], "db.t")
    check_table_spec(partition_spec(schema, ["partition"]), schema, ["identity(partition)"], "db.t")


def test_the_table_is_created_with_the_spec_and_then_keeps_it(tmp_path):
    from kafka_spark.iceberg.batch_append import create_table, open_table
    from kafka_spark.iceberg.position import IcebergLocation

    catalog = IcebergCatalog(warehouse=str(tmp_path / "wh"))
    location = IcebergLocation(catalog, ("db", "t"))
    with pytest.raises(ConfigError, match="unknown transform days_of"):
        create_table(location, kafka_schema(True), ["days_of(timestamp)"])
    with pytest.raises(ConfigError, match="day does not take column topic"):
        create_table(location, kafka_schema(True), ["day(topic)"])
    assert not catalog.open().table_exists(("db", "t"))  # refused before anything was created

    table = create_table(location, kafka_schema(True), ["identity(partition)", "truncate(4, topic)"])
    assert table.metadata.partition_specs == [partition_spec(table.schema(), ["partition", "truncate(4, topic)"])]
    assert table.spec().spec_id == 0 and table.metadata.last_partition_id == 1001
    assert open_table(location, kafka_schema(True), []).spec() == table.spec()
    assert open_table(location, kafka_schema(True), ["partition", "truncate(4,topic)"]).spec() == table.spec()
    with pytest.raises(ConfigError, match=r"differs from the partitioning of the existing table db\.t"):
        open_table(location, kafka_schema(True), ["partition"])
    fmt = IcebergFormat(catalog)
    with pytest.raises(ConfigError, match=r"differs from the partitioning of the existing table db\.t"):
        fmt.check(None, LoadOptions(table="db.t", topics=["t"], partition_by=["bucket(4, key)"]))
    with pytest.raises(ConfigError, match="unknown transform"):
        fmt.check(None, LoadOptions(table="db.new", topics=["t"], partition_by=["week(timestamp)"]))
    # a new table of the Kafka columns: its spec is checked before anything is read
    with pytest.raises(ConfigError, match="day does not take column topic of type string"):
        fmt.check(None, LoadOptions(table="db.new", topics=["t"], partition_by=["day(topic)"]))
    with pytest.raises(ConfigError, match="headers is not a column of the rows"):
        fmt.check(None, LoadOptions(table="db.new", topics=["t"], partition_by=["headers"]))
    with pytest.raises(ConfigError, match="identity does not take column headers of type list"):
        fmt.check(None, LoadOptions(table="db.new", topics=["t"], partition_by=["headers"], include_headers=True,
                                    writer="pyiceberg"))
    # rows a transform makes are known at the commit, which checks them (create_table, above)
    fmt.check(None, LoadOptions(table="db.new", topics=["t"], partition_by=["day(ts)"], writer="pyiceberg",
                                transform="SELECT timestamp AS ts FROM kafka"))


def test_transforms_without_pyiceberg_core_are_refused_before_a_table_is_made(tmp_path, monkeypatch):
    from kafka_spark.iceberg import partitions
    from kafka_spark.iceberg.batch_append import create_table
    from kafka_spark.iceberg.position import IcebergLocation

    monkeypatch.setattr(partitions, "core_installed", lambda: False)
    catalog = IcebergCatalog(warehouse=str(tmp_path / "wh"))
    with pytest.raises(ConfigError, match=r"db.t: pyiceberg computes the partition transforms of timestamp_day, "
                                          "key_bucket with the pyiceberg-core package, which is not installed"):
        create_table(IcebergLocation(catalog, ("db", "t")), kafka_schema(), ["day(timestamp)", "bucket(2, key)"])
    assert not catalog.open().table_exists(("db", "t"))
    identity = create_table(IcebergLocation(catalog, ("db", "u")), kafka_schema(), ["topic"])  # needs no pyiceberg-core
    assert [f.name for f in identity.spec().fields] == ["topic"]


def test_a_transform_for_a_delta_table_is_refused():
    from kafka_spark.delta.backend import DELTA

    with pytest.raises(ConfigError, match=r"partition_by entry 'day\(timestamp\)': Delta tables are partitioned by "
                                          "columns only"):
        DELTA.check(None, LoadOptions(table="/lake/t", topics=["t"], partition_by=["partition", "day(timestamp)"]))


def test_partition_by_settings_keep_a_transforms_comma():
    from kafka_spark.app.values import parse_partitions as parse_setting

    assert parse_setting("day(timestamp), bucket(16, key),partition", "partition-by") == [
        "day(timestamp)", "bucket(16, key)", "partition"]
    assert parse_setting(["a,b", "truncate(4, topic)"], "partition-by") == ["a", "b", "truncate(4, topic)"]
    with pytest.raises(ConfigError, match="partition-by: expected a list of columns"):
        parse_setting(3, "partition-by")

"""The Iceberg catalog settings: the embedded default, table names, and no secret in a repr or an error."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg import IcebergCatalog, IcebergFormat
from kafka_spark.iceberg.catalog import as_catalog, hide_secrets

SECRET = "s3cr3t-47-pa55"


def test_a_warehouse_alone_is_the_embedded_sqlite_catalog(tmp_path):
    props = IcebergCatalog(warehouse=str(tmp_path / "wh")).catalog_properties()
    assert props == {"type": "sql", "warehouse": str(tmp_path / "wh"), "uri": f"sqlite:///{tmp_path / 'wh'}/catalog.db"}
    # another catalog's properties are passed as they are
    rest = IcebergCatalog(uri="http://rest:8181", properties={"type": "rest", "credential": f"id:{SECRET}"})
    assert rest.catalog_properties() == {"uri": "http://rest:8181", "type": "rest", "credential": f"id:{SECRET}"}
    with pytest.raises(ConfigError, match="local directory"):
        IcebergCatalog(warehouse="s3://lake/wh").catalog_properties()
    with pytest.raises(ConfigError, match="give the Iceberg catalog"):
        as_catalog(None)
    assert as_catalog({"warehouse": "/wh", "name": "lake", "s3.endpoint": "http://s3"}) == IcebergCatalog(
        warehouse="/wh", properties={"s3.endpoint": "http://s3"}, name="lake")


def test_tables_are_namespace_and_name_in_the_catalog():
    catalog = IcebergCatalog(warehouse="/wh", name="lake")
    assert catalog.identifier("db.events") == ("db", "events")
    assert catalog.identifier("lake.db.events") == ("db", "events")
    assert catalog.identifier("a.b.events") == ("a", "b", "events")  # a nested namespace
    assert catalog.identifier("bronze.`2024_events`") == ("bronze", "2024_events")
    with pytest.raises(ConfigError, match=r"namespace\.table"):
        catalog.identifier("/lake/events")


def test_no_secret_in_reprs_or_errors(tmp_path):
    catalog = IcebergCatalog(uri=f"postgresql+psycopg://kafka:{SECRET}@db:5432/iceberg",
                             properties={"type": "sql", "credential": f"client:{SECRET}",
                                         "s3.secret-access-key": SECRET, "token": SECRET,
                                         "s3.endpoint": "http://s3:9000"})
    for shown in (repr(catalog), repr(IcebergFormat(catalog)), str(hide_secrets(catalog.catalog_properties()))):
        assert SECRET not in shown and "http://s3:9000" in shown and "db:5432" in shown
    with pytest.raises(ConfigError) as failed:  # the driver is not installed: the error may quote the URI
        catalog.open()
    assert SECRET not in str(failed.value)


def test_tables_of_one_new_namespace_created_side_by_side_all_exist(tmp_path):
    # A routed batch commits its tables in threads: their first commits race to create the namespace.
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    from kafka_spark.iceberg.batch_append import create_table
    from kafka_spark.iceberg.position import IcebergLocation

    catalog = IcebergCatalog(warehouse=str(tmp_path / "wh"))
    schema = pa.schema([pa.field("offset", pa.int64())])
    for round_ in range(3):
        locations = [IcebergLocation(catalog, (f"ns{round_}", f"t{i}")) for i in range(8)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda location: create_table(location, schema), locations))
        assert sorted(catalog.open().list_tables(f"ns{round_}")) == sorted(loc.identifier for loc in locations)


@pytest.mark.parametrize("extra,message", [
    ({"dead_letter": "/dl"}, "dead_letter: the Iceberg sink keeps no dead-letter table"),
    ({"log_dirs": "/kafka-logs"}, "log_dirs: .*Delta tables only"),
    ({"cdc": "upsert", "key_columns": ["id"]}, "cdc 'upsert': change streams are applied to Delta tables only"),
])
def test_options_the_iceberg_sink_does_not_serve_are_refused_by_name(tmp_path, extra, message):
    from kafka_spark.sink import LoadOptions

    fmt = IcebergFormat(IcebergCatalog(warehouse=str(tmp_path)))
    with pytest.raises(ConfigError, match=message):
        fmt.check(None, LoadOptions(table="db.t", topics=["t"], **extra))

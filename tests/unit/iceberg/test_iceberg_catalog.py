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


def test_no_glue_or_aws_client_credential_in_reprs_or_errors():
    hidden = {"glue.access-key-id": "AKIA-GLUE-47", "glue.secret-access-key": SECRET,
              "glue.session-token": f"token-{SECRET}", "client.access-key-id": "AKIA-CLIENT-47",
              "client.secret-access-key": f"client-{SECRET}", "client.session-token": f"client-token-{SECRET}"}
    shown = {"type": "glue", "glue.endpoint": "http://glue:5000", "glue.region": "eu-west-1",
             "client.role-arn": "arn:aws:iam::123456789012:role/lake"}
    catalog = IcebergCatalog(properties={**shown, **hidden, "glue.profile-name": "no-such-profile-47"})
    assert hide_secrets(catalog.catalog_properties()) == {
        **shown, **dict.fromkeys(hidden, "[hidden]"), "glue.profile-name": "no-such-profile-47"}
    for text in (repr(catalog), str(catalog), repr(IcebergFormat(catalog))):
        assert not [v for v in hidden.values() if v in text] and "http://glue:5000" in text
    with pytest.raises(ConfigError) as failed:  # boto3 finds no such profile: the error names the catalog
        catalog.open()
    assert "no-such-profile-47" in str(failed.value)
    assert not [v for v in hidden.values() if v in str(failed.value)], str(failed.value)


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
    ({"log_dirs": "/kafka-logs"}, "log_dirs: .*Delta tables only"),
    ({"cdc": "upsert", "key_columns": ["id"]}, "cdc 'upsert': change streams are applied to Delta tables only"),
])
def test_options_the_iceberg_sink_does_not_serve_are_refused_by_name(tmp_path, extra, message):
    from kafka_spark.sink import LoadOptions

    fmt = IcebergFormat(IcebergCatalog(warehouse=str(tmp_path)))
    with pytest.raises(ConfigError, match=message):
        fmt.check(None, LoadOptions(table="db.t", topics=["t"], **extra))


def test_a_dead_letter_table_that_is_a_path_or_the_table_itself_is_refused(tmp_path):
    import dataclasses

    from kafka_spark.sink import LoadOptions

    fmt = IcebergFormat(IcebergCatalog(warehouse=str(tmp_path)))
    opts = LoadOptions(table="db.t", topics=["t"], value_schema="n INT")
    for dead, message in [("db.t", "'db.t' is the table itself"), ("kafka_spark.db.t", "is the table itself"),
                          (str(tmp_path / "bad"), "a table of its catalog, named namespace.table")]:
        with pytest.raises(ConfigError, match=message):
            fmt.check(None, dataclasses.replace(opts, dead_letter=dead))
    with pytest.raises(ConfigError, match="needs value_schema"):
        fmt.check(None, dataclasses.replace(opts, value_schema=None, dead_letter="db.bad"))

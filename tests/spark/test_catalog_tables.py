"""Catalog tables by name: found with DESCRIBE DETAIL, created like saveAsTable, refused when not Delta."""

from __future__ import annotations

import shutil
import uuid

import pytest

from kafka_spark.delta.catalog import catalog_location, create_catalog_table
from kafka_spark.delta.location import locate
from kafka_spark.errors import ConfigError
from kafka_spark.sink.table_files import LocalFiles, local_path


def unique(prefix: str) -> str:
    return f"default.{prefix}_{uuid.uuid4().hex[:8]}"


def test_a_name_is_created_managed_and_partitioned_then_found(spark):
    name = unique("orders")
    try:
        assert locate(name, spark) is None
        schema = spark.range(1).selectExpr("id AS offset", "'t' AS topic").schema
        location = create_catalog_table(spark, name, schema, ["topic"])
        detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
        assert detail["partitionColumns"] == ["topic"] and detail["location"] == location
        assert spark.sql(f"DESCRIBE TABLE EXTENDED {name}").where("col_name = 'Type'").first()["data_type"] == "MANAGED"
        # Created again (a second first load racing the first): nothing changes.
        assert create_catalog_table(spark, name, schema, ["topic"]) == location
        found = locate(name, spark)
        assert found is not None and found.name == name and found.path == location
        assert isinstance(found.files, LocalFiles) and found.state().refresh() == 0
        assert str(found) == name
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_tables_that_are_not_delta_are_refused(spark):
    name = unique("plain")
    try:
        spark.sql(f"CREATE TABLE {name} (a INT) USING parquet")
        with pytest.raises(ConfigError, match=rf"table {name} is not a Delta table \(parquet\)"):
            catalog_location(spark, name)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_taken_managed_location_says_what_to_do(spark):
    name = unique("taken")
    # A Delta log at the name's managed location and no catalog entry: a first load stopped between the two.
    location = local_path(spark.conf.get("spark.sql.warehouse.dir")) / name.split(".")[1]
    try:
        spark.range(1).write.format("delta").save(str(location))
        with pytest.raises(ConfigError, match=rf"cannot create table {name}: the catalog has no such table, but "
                                              "its managed location is not empty"):
            create_catalog_table(spark, name, spark.range(1).schema)
    finally:
        shutil.rmtree(location, ignore_errors=True)

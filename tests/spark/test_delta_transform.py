"""Transforms of a load: SQL over the view `kafka`, Python callables, and clear errors."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.sink.read_plan import apply_transform


def test_sql_transform_sees_the_batch_as_view_kafka(spark):
    df = spark.createDataFrame([(b'{"u": 1}', 0), (b'{"u": 2}', 1)], "value binary, offset long")
    out = apply_transform(df, "SELECT get_json_object(CAST(value AS STRING), '$.u') AS kafka_u,\n"
                               "offset FROM\nkafka WHERE offset >= 1")
    assert [tuple(r) for r in out.collect()] == [("2", 1)]


def test_callable_and_module_path_transforms(spark):
    df = spark.range(3)
    assert apply_transform(df, lambda d: d.where("id > 0")).count() == 2
    assert apply_transform(df, "pyspark.sql.functions:broadcast").count() == 3
    with pytest.raises(ConfigError, match="no_such_module"):
        apply_transform(df, "no_such_module:f")
    with pytest.raises(ConfigError, match="expected a SQL SELECT"):
        apply_transform(df, "drop everything")



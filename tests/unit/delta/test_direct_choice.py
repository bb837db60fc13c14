"""Which writer a load gets, from its options alone (the table's features: tests/integration/delta)."""

from __future__ import annotations

import pytest

from kafka_spark.delta import LoadOptions
from kafka_spark.delta.direct import choose_writer, direct_writer_reason, rows_schema
from kafka_spark.errors import ConfigError


def options(**kw) -> LoadOptions:
    return LoadOptions(**{"table": "/lake/events", "kafka": {"bootstrap.servers": "b:9092"}, "topics": ["t"], **kw})


@pytest.mark.parametrize(("kw", "named"), [
    ({"table": "lake.events"}, "catalog"),
    ({"transform": "SELECT * FROM kafka"}, "transform"),
    ({"value_schema": "n INT"}, "value_schema"),
    ({"value_schema": "n INT", "dead_letter": "/lake/dead"}, "value_schema"),
    ({"partition_by": ["partition"]}, "partition"),
])
def test_options_that_need_spark_sql_or_a_catalog_name_the_reason(kw, named):
    assert named in direct_writer_reason(None, options(**kw))


def test_a_new_path_table_of_raw_records_is_the_direct_writers():
    assert direct_writer_reason(None, options(), rows_schema(options().source)) is None
    assert '"name":"headers"' in rows_schema(options(include_headers=True).source)


def test_the_writer_is_checked_and_spark_needs_no_table():
    assert choose_writer(None, options(), None).writer == "spark"
    with pytest.raises(ConfigError, match="expected one of auto, spark, direct"):
        choose_writer(None, options(writer="fast"), None)
    with pytest.raises(ConfigError, match=r"writer .direct. cannot write to lake\.events: the table is named"):
        choose_writer(None, options(table="lake.events", writer="direct"), None)
    auto = choose_writer(None, options(table="lake.events", writer="auto"), None)
    assert auto.writer == "spark" and "catalog" in auto.reason

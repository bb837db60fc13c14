"""A registry format's decoded change events keep their decimals: Debezium's Avro `numeric` (an Avro decimal) is
the batch's DECIMAL(p, s) column, exact, in every batch alike, where its values alone (as JSON numbers) make a
DOUBLE (tests/unit/delta/test_cdc_declared_types.py: which columns are declared)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kafka_spark.delta.changes import batch_changes
from kafka_spark.sink.change_capture import ChangeCapture

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# beyond a double's 15-17 significant digits
EXACT = [Decimal("1234567890123456.7891"), Decimal("-0.0001"), Decimal("0.0000")]


def rows_of(spark, schema: str, records: list[tuple]) -> tuple[dict[str, str], list[dict]]:
    df = spark.createDataFrame(records, f"topic string, partition int, offset long, timestamp timestamp, {schema}")
    changes = batch_changes(df, ChangeCapture("debezium"), None, None)
    try:
        types = {f.name: f.dataType.simpleString() for f in changes.rows.schema.fields}
        return types, [r.asDict() for r in changes.rows.orderBy("id").collect()]
    finally:
        changes.release()


def test_decoded_decimals_stay_exact_decimals(spark):
    row = "struct<id: int, price: decimal(20,4), note: string>"
    schema = f"key struct<id: int>, value struct<before: {row}, after: {row}, source: struct<lsn: bigint>, op: string>"
    records = [("t", 0, i, None, (i,), (None, (i, price, f"n{i}"), (100 + i,), "r"))
               for i, price in enumerate(EXACT)]
    types, rows = rows_of(spark, schema, records)
    assert types["price"] == "decimal(20,4)"
    assert [r["price"] for r in rows] == EXACT


def test_json_numbers_still_make_a_double(spark):
    records = [("t", 0, 0, None, b'{"id": 0}', b'{"op": "r", "after": {"id": 0, "price": 12.5}}')]
    types, rows = rows_of(spark, "key binary, value binary", records)
    assert types["price"] == "double" and rows[0]["price"] == 12.5

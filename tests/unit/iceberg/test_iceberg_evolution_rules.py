"""How rows change an Iceberg table's schema: the columns they add (nested ones too), the types Iceberg widens,
and the changes refused whatever the settings, each naming the table, the column and both types."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from kafka_spark.iceberg.catalog import optional_schema
from kafka_spark.iceberg.evolution import (
    IncompatibleTypeError,
    SchemaChanges,
    SchemaMismatchError,
    Widening,
    mismatch,
    rows_changes,
    widens,
)
from kafka_spark.iceberg.partitions import iceberg_schema
from kafka_spark.sink.errors import SinkError


@pytest.mark.parametrize(("have", "given", "wider"), [
    (IntegerType(), LongType(), True),
    (FloatType(), DoubleType(), True),
    (DecimalType(9, 2), DecimalType(12, 2), True),
    (DecimalType(9, 2), DecimalType(9, 2), False),
    (DecimalType(12, 2), DecimalType(9, 2), False),  # narrower
    (DecimalType(9, 2), DecimalType(12, 3), False),  # a scale never changes
    (LongType(), IntegerType(), False),
    (DoubleType(), FloatType(), False),
    (IntegerType(), DoubleType(), False),
    (StringType(), BinaryType(), False),
    (TimestampType(), TimestamptzType(), False),
])
def test_icebergs_promotions_only(have, given, wider):
    assert widens(have, given) is wider


TABLE = pa.schema([
    ("id", pa.int32()), ("price", pa.float32()), ("amount", pa.decimal128(9, 2)), ("name", pa.string()),
    ("address", pa.struct([("street", pa.string())])),
    ("tags", pa.list_(pa.struct([("k", pa.string())]))),
    ("attrs", pa.map_(pa.string(), pa.struct([("v", pa.int32())]))),
])


def changes_of(rows: pa.Schema) -> SchemaChanges:
    return rows_changes(iceberg_schema(optional_schema(TABLE)), rows, "db.orders")


def test_the_same_columns_change_nothing_and_missing_ones_are_not_a_change():
    assert not changes_of(TABLE)
    assert not changes_of(pa.schema([("id", pa.int32()), ("name", pa.large_string())]))


def test_added_columns_top_level_and_nested_and_widened_types():
    rows = pa.schema([
        ("id", pa.int64()), ("price", pa.float64()), ("amount", pa.decimal128(12, 2)), ("name", pa.string()),
        ("address", pa.struct([("street", pa.string()), ("zip", pa.string())])),
        ("tags", pa.list_(pa.struct([("k", pa.string()), ("weight", pa.float64())]))),
        ("attrs", pa.map_(pa.string(), pa.struct([("v", pa.int64()), ("at", pa.timestamp("us", "UTC"))]))),
        ("channel", pa.string()),
    ])
    changes = changes_of(rows)
    assert changes.added == ["address.zip", "tags.element.weight", "attrs.value.at", "channel"]
    assert changes.widened == [Widening("id", "int", "long"), Widening("price", "float", "double"),
                               Widening("amount", "decimal(9, 2)", "decimal(12, 2)"),
                               Widening("attrs.value.v", "int", "long")]


@pytest.mark.parametrize(("rows", "column", "table_type", "rows_type"), [
    (pa.schema([("id", pa.int16())]), None, None, None),  # Arrow's int16 is Iceberg's int: the same type
    (pa.schema([("name", pa.int32())]), "name", "string", "int"),
    (pa.schema([("amount", pa.decimal128(8, 2))]), None, None, None),  # narrower: written as the table's
    (pa.schema([("amount", pa.decimal128(12, 3))]), "amount", "decimal(9, 2)", "decimal(12, 3)"),
    (pa.schema([("address", pa.string())]), "address", "a struct", "string"),
    (pa.schema([("address", pa.struct([("street", pa.int64())]))]), "address.street", "string", "long"),
    (pa.schema([("tags", pa.list_(pa.string()))]), "tags.element", "a struct", "string"),
])
def test_other_types_are_refused_naming_table_column_and_types(rows, column, table_type, rows_type):
    if column is None:
        assert not changes_of(rows)
        return
    with pytest.raises(IncompatibleTypeError) as refused:
        changes_of(rows)
    error = refused.value
    assert (error.table, error.column, error.table_type, error.rows_type) == ("db.orders", column, table_type,
                                                                               rows_type)
    assert isinstance(error, SchemaMismatchError) and isinstance(error, SinkError)
    assert str(error).startswith(f"db.orders: column {column} is {table_type} in the table but {rows_type} in the "
                                 "rows; a table's column type only widens (int → long, float → double")


def test_narrower_rows_change_nothing_and_other_kinds_are_refused():
    table = iceberg_schema(optional_schema(pa.schema([("n", pa.int64()), ("x", pa.float64())])))
    assert not rows_changes(table, pa.schema([("n", pa.int32()), ("x", pa.float32())]), "db.t")
    with pytest.raises(IncompatibleTypeError, match="column n is long in the table but double in the rows"):
        rows_changes(table, pa.schema([("n", pa.float64())]), "db.t")


def test_without_merge_schema_the_changes_are_refused_as_delta_refuses_them():
    changes = SchemaChanges(["channel", "address.zip"], [Widening("id", "int", "long")])
    error = mismatch(changes, "db.orders")
    assert (error.table, error.added, error.widened) == ("db.orders", ["channel", "address.zip"],
                                                         ["id (int → long)"])
    assert str(error) == (
        "A schema mismatch detected when writing to the Iceberg table db.orders: the rows have columns the table "
        "lacks: channel, address.zip; they widen id (int → long). Set merge_schema to evolve the table's schema "
        "(existing columns keep their field ids, new ones get new ids); nothing was committed")

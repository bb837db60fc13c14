"""How a batch's rows change an Iceberg table's schema: columns added, types widened, the rest refused.

The rows' columns are matched to the table's by name, nested ones too (a struct's fields, a list's element, a
map's key and value). A column the table lacks is added with a new field id; a type the rows give wider is
widened where Iceberg's rules allow it: int → long, float → double, decimal(P, S) → decimal(P', S) with
P' > P. Every existing field keeps its id, so the files written before read on (the new columns as nulls, the
widened ones as the wider type). Both changes need `merge_schema` (or a registry format that follows its
subject's new versions); without it they are refused as Delta's writer refuses a schema mismatch
(SchemaMismatchError). A type the rows give narrower than the table's (int rows for a long column) changes
nothing: the rows are written as the table's type, as Iceberg itself promotes them (and as Delta's writer casts
them up). A type of another kind (string → int) is refused whatever the settings (IncompatibleTypeError). A column
the rows lack is written as nulls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_spark.iceberg.catalog import optional_schema
from kafka_spark.iceberg.partitions import iceberg_schema
from kafka_spark.sink.errors import SinkError

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table, Transaction
    from pyiceberg.types import IcebergType

PROMOTIONS = "int → long, float → double, decimal(P, S) → decimal(P', S) with P' > P"


class SchemaMismatchError(SinkError):
    """The rows add columns to the table or widen its types and `merge_schema` is off: nothing was committed."""

    def __init__(self, message: str, table: str, added: list[str], widened: list[str]) -> None:
        super().__init__(message)
        self.table = table
        self.added = added
        self.widened = widened


class IncompatibleTypeError(SchemaMismatchError):
    """A column's type in the rows is of another kind than the table's (neither widens to the other): nothing was
    committed."""

    def __init__(self, table: str, column: str, table_type: str, rows_type: str) -> None:
        super().__init__(
            f"{table}: column {column} is {table_type} in the table but {rows_type} in the rows; a table's column "
            f"type only widens ({PROMOTIONS}) and narrower rows are written as the table's type, so the batch "
            "is refused and nothing was committed", table, [], [])
        self.column = column
        self.table_type = table_type
        self.rows_type = rows_type


@dataclass(frozen=True)
class Widening:
    """A column whose type the rows widen."""

    column: str
    table_type: str
    rows_type: str

    def __str__(self) -> str:
        return f"{self.column} ({self.table_type} → {self.rows_type})"


@dataclass
class SchemaChanges:
    """What the rows change in the table's schema: the columns they add (dotted paths) and the types they widen."""

    added: list[str] = field(default_factory=list)
    widened: list[Widening] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.widened)


def widens(have: IcebergType, given: IcebergType) -> bool:
    """Whether Iceberg's schema evolution promotes `have` (the table's type) to `given`."""
    from pyiceberg.types import DecimalType, DoubleType, FloatType, IntegerType, LongType

    if isinstance(have, IntegerType):
        return isinstance(given, LongType)
    if isinstance(have, FloatType):
        return isinstance(given, DoubleType)
    if isinstance(have, DecimalType) and isinstance(given, DecimalType):
        return given.scale == have.scale and given.precision > have.precision
    return False


def schema_changes(table_schema: Schema, rows_schema: Schema, table: str) -> SchemaChanges:
    """What rows of `rows_schema` change in `table`'s schema (`table_schema`), by name; IncompatibleTypeError
    for a column whose type cannot become the rows'."""
    changes = SchemaChanges()
    _compare("", table_schema.as_struct(), rows_schema.as_struct(), changes, table)
    return changes


def _compare(path: str, have: IcebergType, given: IcebergType, changes: SchemaChanges, table: str) -> None:
    from pyiceberg.types import ListType, MapType, StructType

    if isinstance(have, StructType) and isinstance(given, StructType):
        fields = {f.name: f for f in have.fields}
        for child in given.fields:
            name = f"{path}.{child.name}" if path else child.name
            old = fields.get(child.name)
            if old is None:
                changes.added.append(name)
            else:
                _compare(name, old.field_type, child.field_type, changes, table)
    elif isinstance(have, ListType) and isinstance(given, ListType):
        _compare(f"{path}.element", have.element_type, given.element_type, changes, table)
    elif isinstance(have, MapType) and isinstance(given, MapType):
        _compare(f"{path}.key", have.key_type, given.key_type, changes, table)
        _compare(f"{path}.value", have.value_type, given.value_type, changes, table)
    elif have.is_primitive and given.is_primitive and have == given:
        return
    elif have.is_primitive and given.is_primitive and widens(have, given):
        changes.widened.append(Widening(path, str(have), str(given)))
    elif have.is_primitive and given.is_primitive and widens(given, have):
        return  # the rows' values are written as the table's wider type
    else:
        raise IncompatibleTypeError(table, path, _shown(have), _shown(given))


def _shown(kind: IcebergType) -> str:
    """A type as the error shows it: a primitive by name, a nested one by kind."""
    from pyiceberg.types import ListType, MapType, StructType

    if isinstance(kind, StructType):
        return "a struct"
    if isinstance(kind, ListType):
        return "a list"
    if isinstance(kind, MapType):
        return "a map"
    return str(kind)


def rows_changes(table_schema: Schema, rows: Any, table: str) -> SchemaChanges:
    """`schema_changes` of Arrow `rows` (a schema)."""
    return schema_changes(table_schema, iceberg_schema(optional_schema(rows)), table)


def mismatch(changes: SchemaChanges, table: str) -> SchemaMismatchError:
    """The refusal of `changes` without `merge_schema`, worded as Delta's writer words its own."""
    parts = []
    if changes.added:
        parts.append(f"the rows have columns the table lacks: {', '.join(changes.added)}")
    if changes.widened:
        parts.append(f"they widen {', '.join(str(w) for w in changes.widened)}")
    return SchemaMismatchError(
        f"A schema mismatch detected when writing to the Iceberg table {table}: {'; '.join(parts)}. Set "
        "merge_schema to evolve the table's schema (existing columns keep their field ids, new ones get new "
        "ids); nothing was committed", table, list(changes.added), [str(w) for w in changes.widened])


def evolve(txn: Transaction, rows: Any, merge_schema: bool, table: str) -> SchemaChanges:
    """Stage in `txn` the changes Arrow `rows` (a schema) make to its table's schema; SchemaMismatchError
    without `merge_schema`, IncompatibleTypeError for a type that cannot change so."""
    changes = rows_changes(txn.table_metadata.schema(), rows, table)
    if changes:
        if not merge_schema:
            raise mismatch(changes, table)
        with txn.update_schema() as update:
            # Only additions and Iceberg's promotions are left (checked above): pyiceberg's union by name does
            # exactly those, new fields getting ids above the table's last.
            update.union_by_name(optional_schema(rows))
    return changes


def evolved(iceberg: Table, rows: Any, merge_schema: bool, table: str) -> Table:
    """`iceberg` with the changes of Arrow `rows` (a schema) committed to its schema in a commit of their own
    (the direct writer's files need the new field ids before they are written); refused as `evolve` refuses."""
    txn = iceberg.transaction()
    if not evolve(txn, rows, merge_schema, table):
        return iceberg
    txn.commit_transaction()
    return iceberg.refresh()

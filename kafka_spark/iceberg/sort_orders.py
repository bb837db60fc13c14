"""The sort orders of the Iceberg tables the sink creates, from `sort_by`, and rows put in a table's order.

An entry of `sort_by` is what a `partition_by` entry is (a top-level column, or one of Iceberg's transforms of
one: partitions.py), then optionally `asc` or `desc` and `nulls first` or `nulls last`, as Spark SQL's Iceberg
DDL writes an order (`ALTER TABLE t WRITE ORDERED BY key, timestamp DESC`): ascending unless `desc`, nulls
first when ascending and last when descending (Iceberg's defaults).

A new table is created with the order. A table that exists keeps its own: a `sort_by` given for it must be
that order, or it is refused; none takes the table's as it is (unsorted, or the order Spark gave it). Each data
file either writer adds holds its rows in the table's order (`sorted_rows`): the order is within a file, as
Iceberg's writers keep it, not across the table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.iceberg.partitions import PartitionEntry, needs_core, parse_entry, require_core, spell_transform

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortOrder
    from pyiceberg.types import StructType

ACCEPTED = ("a column or a transform of one as partition_by takes it (identity(c), year(c), month(c), day(c), "
            "hour(c), bucket(N, c), truncate(W, c); c: a top-level column), then optionally asc or desc, then "
            "nulls first or nulls last")
_ENTRY = re.compile(r"(?is)(?P<expression>.*?)(?:\s+(?P<direction>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?")


@dataclass(frozen=True)
class SortEntry:
    """One parsed `sort_by` entry: what is sorted (a column or a transform of one), its direction, where nulls go."""

    expression: PartitionEntry
    descending: bool = False
    nulls_first: bool = True

    def __str__(self) -> str:
        return (f"{self.expression} {'DESC' if self.descending else 'ASC'} "
                f"NULLS {'FIRST' if self.nulls_first else 'LAST'}")


def _refused(entry: str, why: str) -> ConfigError:
    return ConfigError(f"sort_by entry {entry!r}: {why}; accepted: {ACCEPTED}")


def parse_sort_entry(entry: str) -> SortEntry:
    """The entry parsed (keywords in any case); ConfigError naming it and what is accepted."""
    if not isinstance(entry, str):
        raise _refused(str(entry), "not a string")
    match = _ENTRY.fullmatch(entry.strip())
    assert match is not None  # every text matches: the expression takes what the keywords leave
    expression = parse_entry(match["expression"], "sort_by", ACCEPTED)
    descending = (match["direction"] or "asc").lower() == "desc"
    nulls = match["nulls"]
    nulls_first = not descending if nulls is None else nulls.lower() == "first"
    return SortEntry(expression, descending, nulls_first)


def parse_sort_by(sort_by: Sequence[str]) -> list[SortEntry]:
    """Every entry parsed; ConfigError for a bad one and for one expression sorted twice."""
    if isinstance(sort_by, str):
        sort_by = [sort_by]
    entries = [parse_sort_entry(e) for e in sort_by]
    seen: set[str] = set()
    for entry in entries:
        key = str(entry.expression)
        if key in seen:
            raise ConfigError(f"sort_by: {key} is sorted twice; give it once")
        seen.add(key)
    return entries


def sort_order(schema: Schema, sort_by: Sequence[str]) -> SortOrder:
    """The order of a new table of `schema` sorted by `sort_by` (unsorted when empty); ConfigError for a column
    the schema lacks, one that is not of a primitive type, or of a type the transform does not take."""
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder

    columns = {f.name: f for f in schema.fields}
    fields = []
    for entry in parse_sort_by(sort_by):
        expression = entry.expression
        source = columns.get(expression.column)
        if source is None:
            raise _refused(str(entry), f"{expression.column} is not a column of the rows ({', '.join(columns)})")
        transform = expression.iceberg()
        if not source.field_type.is_primitive or not transform.can_transform(source.field_type):
            raise _refused(str(entry), f"{expression.transform} does not sort column {expression.column} of type "
                                       f"{source.field_type} (a sort order takes primitive columns)")
        fields.append(SortField(source_id=source.field_id, transform=transform,
                                direction=SortDirection.DESC if entry.descending else SortDirection.ASC,
                                null_order=NullOrder.NULLS_FIRST if entry.nulls_first else NullOrder.NULLS_LAST))
    return SortOrder(*fields) if fields else UNSORTED_SORT_ORDER


def spelled_order(order: SortOrder, schema: Schema) -> list[str]:
    """`order` as `sort_by` entries spell it in full (`key ASC NULLS FIRST`); a void field left out."""
    from pyiceberg.table.sorting import NullOrder, SortDirection

    entries = []
    for field in order.fields:
        expression = spell_transform(field.transform, schema.find_column_name(field.source_id) or
                                     f"<field {field.source_id}>")
        if expression is not None:
            direction = "DESC" if field.direction == SortDirection.DESC else "ASC"
            nulls = "FIRST" if field.null_order == NullOrder.NULLS_FIRST else "LAST"
            entries.append(f"{expression} {direction} NULLS {nulls}")
    return entries


def check_table_order(order: SortOrder, schema: Schema, sort_by: Sequence[str], table: str) -> None:
    """Refuse `sort_by` for the existing `table` of this order and schema unless it is the table's order (the
    same expressions, directions and null orders, in order); an empty one takes the table's order."""
    if not sort_by:
        return
    wanted = [str(e) for e in parse_sort_by(sort_by)]
    have = spelled_order(order, schema)
    if wanted != have:
        raise ConfigError(f"sort_by ({', '.join(wanted)}) differs from the sort order of the existing table {table} "
                          f"({', '.join(have) or 'unsorted'}): a table keeps its own order; give sort_by as that "
                          "order, or none to write the table in its order")


def require_sort_transforms(order: SortOrder, table: str) -> None:
    """ConfigError when `order` sorts by a transform pyiceberg computes with `pyiceberg-core` and it is missing."""
    needs = [str(f.transform) for f in order.fields if needs_core(f.transform)]
    require_core(needs, f"the sort order's transforms ({', '.join(needs)})", table)


def sorted_rows(rows: Any, order: SortOrder | None, schema: Schema) -> Any:
    """`rows` (an Arrow table or record batch, columns named as `schema`'s) in `order`; ties keep their order. A
    sort field whose column the rows lack is left out (null in every row, it orders nothing)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.table.sorting import NullOrder, SortDirection
    from pyiceberg.transforms import IdentityTransform, VoidTransform

    if order is None or order.is_unsorted or rows.num_rows < 2:
        return rows
    keys: dict[str, Any] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, field in enumerate(order.fields):
        if isinstance(field.transform, VoidTransform):
            continue
        column = _column(rows, _path(schema.as_struct(), field.source_id) or [])
        if column is None:
            continue
        if not isinstance(field.transform, IdentityTransform):
            column = field.transform.pyarrow_transform(schema.find_field(field.source_id).field_type)(column)
        # Each key is sorted by whether it is null first, so every field places its nulls its own way (Arrow's
        # null placement is one for all keys).
        keys[f"n{i}"], keys[f"k{i}"] = pc.is_null(column), column
        first = field.null_order == NullOrder.NULLS_FIRST
        sort_keys += [(f"n{i}", "descending" if first else "ascending"),
                      (f"k{i}", "descending" if field.direction == SortDirection.DESC else "ascending")]
    if not sort_keys:
        return rows
    return rows.take(pc.sort_indices(pa.table(keys), sort_keys=sort_keys))


def _path(struct: StructType, field_id: int) -> list[str] | None:
    """The names leading to the field `field_id` through structs (where a sort order's sources may be)."""
    from pyiceberg.types import StructType

    for field in struct.fields:
        if field.field_id == field_id:
            return [field.name]
        if isinstance(field.field_type, StructType):
            below = _path(field.field_type, field_id)
            if below is not None:
                return [field.name, *below]
    return None


def _column(rows: Any, path: list[str]) -> Any:
    """The Arrow array at `path` in `rows` (a struct's field by its names), None when the rows lack it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not path or rows.schema.get_field_index(path[0]) < 0:
        return None
    column = rows.column(path[0])
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    for name in path[1:]:
        if not pa.types.is_struct(column.type) or column.type.get_field_index(name) < 0:
            return None
        column = pc.struct_field(column, [column.type.get_field_index(name)])
    return column

"""A change stream's batch as the MERGE's rows, found in the read tasks (sink/change_reader.py) without Spark SQL.

The tasks yield their last change per key as Arrow with the JSON kinds of every row's columns; here the
columns are typed as delta/changes.py types them (`value_schema`'s type, the table's, else what all of the
batch's rows show), each task's changes are cast to those types, and a key changed in several tasks keeps its
last change by (partition, offset). A batch the tasks were unsure of, or whose values do not convert to their
column's type exactly as the SQL parse's `variant_get` would, returns the reason instead (`Unsure`): the
caller then applies it through delta/changes.py, which decides it (a row, a dead letter or the error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.delta.changes import DELETED, BatchChanges, data_columns, field_type, first_type, known_types
from kafka_spark.sink.change_capture import LSN_COLUMN, OP_COLUMN, SOFT_DELETE_COLUMN, SOURCE_TS_COLUMN, ChangeCapture
from kafka_spark.sink.change_reader import (
    CHANGE_ROWS_DDL,
    KEY_PREFIX,
    LSN,
    OFFSET,
    OP,
    PARTITION,
    ROW_PREFIX,
    TS,
    ChangeSpec,
    Unsure,
)
from kafka_spark.sink.freshness import Freshness, files_freshness

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

log = logging.getLogger(__name__)

READER = "kafka_spark.sink.change_reader:read_changes"
_ORDER = "__kafka_spark_order"


@dataclass
class TaskChanges:
    """The batch's changes (rows as Arrow) and the freshness of its records."""

    changes: BatchChanges
    freshness: Freshness | None


def change_options(capture: ChangeCapture) -> dict[str, str]:
    """The internal `pykafka` options that make a read yield its tasks' last changes."""
    spec = ChangeSpec(capture.mode, capture.key_columns, capture.metadata)
    return {"directWriteTo": json.dumps({"writer": READER, "rows": CHANGE_ROWS_DDL,
                                         "spec": json.loads(msgspec.json.encode(spec))})}


def task_changes(read: Callable[[Mapping[str, str] | None], Any], capture: ChangeCapture,
                 table_schema: StructType | None, value_schema: StructType | None) -> TaskChanges | str:
    """The batch's changes found by its read tasks, or why the SQL parse has to find them."""
    return changes_of([r.asDict() for r in read(change_options(capture)).collect()], capture, table_schema,
                      value_schema)


def changes_of(rows: list[dict[str, Any]], capture: ChangeCapture, table_schema: StructType | None,
               value_schema: StructType | None) -> TaskChanges | str:
    """The batch's changes from its tasks' rows (`CHANGE_ROWS_DDL`), or why the SQL parse has to find them."""
    unsure = next((r["unsure"] for r in rows if r["unsure"]), None)
    if unsure is not None:
        return unsure
    try:
        changes = _combine(rows, capture, table_schema, value_schema)
    except Unsure as exc:
        return str(exc)
    return TaskChanges(changes, files_freshness(rows))


def _combine(rows: list[dict[str, Any]], capture: ChangeCapture, table_schema: StructType | None,
             value_schema: StructType | None) -> BatchChanges:
    from pyspark.sql.types import StructField, StructType

    records = sum(r["records"] for r in rows)
    tasks = [pa.ipc.open_stream(r["changes"]).read_all() for r in rows]
    kinds = [json.loads(r["kinds"]) for r in rows]
    key_kinds = _union(k["k"] for k in kinds)
    row_kinds = _union(k["r"] for k in kinds)
    keys = capture.key_columns or tuple(sorted(key_kinds, key=_variant_order))
    if not keys:
        raise Unsure("the record keys name no key columns")
    if any(set(k["k"]) != set(keys) for k, t in zip(kinds, tasks, strict=True) if t.num_rows):
        raise Unsure("record keys with different fields")
    known = known_types(table_schema, value_schema)
    inferred_rows = StructType([StructField(n, _inferred(row_kinds[n], n, known), True)
                                for n in sorted(row_kinds, key=_variant_order)])
    key_types = {k: first_type(known.get(k), _inferred(key_kinds.get(k, []), k, known), field_type(inferred_rows, k))
                 for k in keys}
    data = data_columns(keys, inferred_rows, known, table_schema)
    columns = ([(KEY_PREFIX + k, k, key_types[k]) for k in keys]
               + [(ROW_PREFIX + name, name, kind) for name, kind in data])
    typed = [_typed(t, columns) for t in tasks if t.num_rows]
    if not typed:
        raise Unsure("no change records")  # the SQL parse commits an empty batch's position alone
    table = _last_per_key(pa.concat_tables(typed), list(keys))
    ops = table.column(OP)
    deleted = pc.equal(ops, "d")
    out: dict[str, pa.Array | pa.ChunkedArray] = {name: table.column(name) for _, name, _ in columns}
    if capture.metadata:
        out.update({OP_COLUMN: ops, SOURCE_TS_COLUMN: table.column(TS), LSN_COLUMN: table.column(LSN)})
    if capture.soft_delete:
        out[SOFT_DELETE_COLUMN] = deleted
    out[DELETED] = deleted
    names = (*keys, *(name for name, _ in data), *((OP_COLUMN, SOURCE_TS_COLUMN, LSN_COLUMN) if capture.metadata
                                                   else ()), *((SOFT_DELETE_COLUMN,) if capture.soft_delete else ()))
    return BatchChanges(None, keys, names, False, records, capture.soft_delete, arrow=pa.table(out))


def _variant_order(name: str) -> bytes:
    """A VARIANT object's field order (Java's String order: by UTF-16 code unit), which the SQL parse's inferred
    columns follow."""
    return name.encode("utf-16-be")


def _union(parts: Any) -> dict[str, list[str]]:
    found: dict[str, set[str]] = {}
    for part in parts:
        for name, kinds in part.items():
            found.setdefault(name, set()).update(kinds)
    return {name: sorted(kinds) for name, kinds in found.items()}


def _inferred(kinds: list[str], name: str, known: dict[str, DataType]) -> DataType:
    """The type the SQL parse infers for a column of values of these JSON kinds (NullType: only nulls)."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, NullType, StringType

    seen = tuple(k for k in kinds if k != "null")
    found = {(): NullType(), ("long",): LongType(), ("double",): DoubleType(), ("double", "long"): DoubleType(),
             ("string",): StringType(), ("bool",): BooleanType()}.get(seen)
    if found is None:
        if name in known:
            return StringType()  # the known type decides; _typed converts each task's values to it or is unsure
        raise Unsure(f"column {name} holds values of several JSON types ({', '.join(kinds)})")
    return found


def _arrow_type(kind: DataType) -> pa.DataType:
    from pyspark.sql.types import (
        BooleanType,
        ByteType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
    )

    for spark, arrow in ((LongType, pa.int64()), (IntegerType, pa.int32()), (ShortType, pa.int16()),
                         (ByteType, pa.int8()), (DoubleType, pa.float64()), (FloatType, pa.float32()),
                         (StringType, pa.string()), (BooleanType, pa.bool_())):
        if isinstance(kind, spark):
            return arrow
    raise Unsure(f"a column of type {kind.simpleString()}")


def _typed(task: pa.Table, columns: list[tuple[str, str, DataType]]) -> pa.Table:
    """A task's changes with the batch's columns, each of its type."""
    out: dict[str, pa.Array | pa.ChunkedArray] = {c: task.column(c) for c in (PARTITION, OFFSET, OP, TS, LSN)
                                                  if c in task.column_names}
    for source, name, kind in columns:
        target = _arrow_type(kind)
        out[name] = (_converted(task.column(source), target, name) if source in task.column_names
                     else pa.nulls(task.num_rows, target))
    return pa.table(out)


def _converted(values: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    """The values as `target`, where the conversion is the SQL parse's exactly: integers into a narrower
    integer that holds them or a double, an integer that a float holds exactly; nothing else."""
    kind = values.type
    if kind == target:
        return values
    if pa.types.is_null(kind):
        return pa.chunked_array([pa.nulls(len(values), target)])
    if pa.types.is_int64(kind) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        try:
            return values.cast(target, safe=not pa.types.is_float64(target))
        except (pa.ArrowInvalid, OverflowError):
            raise Unsure(f"column {name}: an integer that {target} does not hold") from None
    raise Unsure(f"column {name}: {kind} values for a {target} column")


def _last_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """Each key's last change by (partition, offset)."""
    order = pc.sort_indices(table, sort_keys=[(PARTITION, "ascending"), (OFFSET, "ascending")])
    table = table.take(order)
    table = table.append_column(_ORDER, pa.array(range(table.num_rows), pa.int64()))
    last = table.group_by(keys).aggregate([(_ORDER, "max")])
    if last.num_rows == table.num_rows:
        return table.drop_columns([_ORDER])
    kept = last.column(f"{_ORDER}_max")
    return table.take(pc.take(kept, pc.sort_indices(kept))).drop_columns([_ORDER])

"""A batch of change events as the rows a MERGE applies: per key, the last change in Kafka order.

The batch's records (Spark's Kafka columns) are parsed in Spark SQL as VARIANT (`try_parse_json`), so an
envelope's columns need no schema given up front: one aggregation finds the columns of the rows
(`schema_of_variant_agg`), the first record that cannot be applied, and the truncates; a second check finds a
record without a key. Column types are, in this order: `value_schema`'s (the source table's columns as Spark
DDL), the table's own, or what the batch's values show (JSON integers as BIGINT, other numbers as DOUBLE:
a column keeps the type it was created with, and a JSON number's precision varies from value to value). A
registry format's decoded key and value declare their decimals (`declared_types`): such a column is the
writer's DECIMAL(p, s), which no batch's values could say.

Debezium: the value is `{"schema": ..., "payload": ENVELOPE}` (the JSON converter with schemas) or ENVELOPE;
ENVELOPE has `op` (c, r, u, d, t), `before`, `after` and `source` (`ts_ms`, `lsn`). The key likewise, with
or without `schema`. A null value (the tombstone after a delete) deletes its key. Upsert mode: the value is
the row, a null value deletes. Keys come from the record key's fields (a JSON object), else from the row
(or `before`), else, for one key column, the whole key (JSON scalar or plain text).

Ordering: a key's changes share a partition, so the last by (partition, offset) is the last made. A
truncate (`t`) drops the table's rows and its partition's earlier changes of the batch; changes read from
other partitions in the same batch are kept (Debezium orders a truncate only within its partition).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.sink.change_capture import (
    LSN_COLUMN,
    METADATA_COLUMNS,
    OP_COLUMN,
    SOFT_DELETE_COLUMN,
    SOURCE_TS_COLUMN,
    ChangeCapture,
    not_older,
)
from kafka_spark.sink.checked_values import DECODE_ERRORS, RAW_COLUMNS
from kafka_spark.sink.errors import ChangeEventError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

# The source's column that says a key's last change deletes it; never a table column.
DELETED = "__kafka_spark_deleted"
# What the MERGE's job raises on meeting a record without a key (BatchChanges.refused names the first).
KEYLESS = "kafka-spark: a change record without a key"
DEBEZIUM_OPS = ("c", "r", "u", "d", "t")
# A dead letter's columns of the record, as the cached parse keeps them with `keep_bad` (the dead-letter table's
# `key` and `value` are the record's bytes: a registry format's raw ones).
DEAD_LETTER_SOURCE = ("topic", "partition", "offset", "timestamp", "_raw_key", "_raw_value")
UPSERTS = ("c", "r", "u")


@dataclass
class BatchChanges:
    """The batch's last change per key (`rows`: key and data columns, metadata columns, DELETED), whether it
    truncates the table, and how many change records it read. With `soft_delete` a delete marks its row
    (`marks`: the columns it sets) rather than removing it."""

    rows: DataFrame | None  # None when the read tasks found them (`arrow`)
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    truncated: bool
    records: int
    soft_delete: bool = False
    parsed: DataFrame | None = None  # the batch's records parsed once, cached until release()
    keyless: DataFrame | None = None  # its records with no value for a key column
    # With a dead-letter table: the records that cannot be applied (DEAD_LETTER_SOURCE columns and `error`),
    # left out of `rows`, and how many they are.
    bad: DataFrame | None = None
    dead_letters: int = 0
    # With a history table: every change of the batch that has a key (and every truncate), in Kafka order.
    history: DataFrame | None = None
    # The same rows as Arrow, when the read tasks found them (delta/task_changes.py): no DataFrame then.
    arrow: pa.Table | None = None

    def to_arrow(self) -> pa.Table:
        """`rows` as Arrow."""
        if self.arrow is not None:
            return self.arrow
        assert self.rows is not None
        return self.rows.toArrow()

    def left_arrow(self) -> pa.Table:
        """`left()` as Arrow."""
        if self.arrow is None:
            return self.left().toArrow()
        import pyarrow.compute as pc

        return self.arrow.filter(pc.invert(self.arrow.column(DELETED))).drop_columns([DELETED])

    def release(self) -> None:
        """Drop the cached parse (after the commit)."""
        if self.parsed is not None:
            self.parsed.unpersist()

    def refused(self, exc: BaseException) -> ChangeEventError | None:
        """The error naming the batch's first record without a key, when `exc` is the MERGE's job failing on
        one (`rows` raises as it meets such a record: no job of its own looks for them first)."""
        if self.keyless is None or KEYLESS not in str(exc):
            return None
        first = self.keyless.orderBy("partition", "offset").limit(1).collect()
        if not first:
            return None
        row = first[0]
        return _record_error(row["topic"], row["partition"], row["offset"],
                             f"no value for the key column(s) {', '.join(self.keys)}")

    def dead_letter_rows(self) -> DataFrame:
        """The records left out (`bad`) as the dead-letter table's columns after `sink` and `batch`."""
        assert self.bad is not None
        return self.bad.withColumnsRenamed({"_raw_key": "key", "_raw_value": "value"})

    def left(self) -> DataFrame:
        """The rows the batch leaves (its deletes dropped): a table's first commit, made by an append."""
        assert self.rows is not None
        return self.rows.where(f"NOT `{DELETED}`").drop(DELETED)


@dataclass(frozen=True)
class MergeClauses:
    """A batch's MERGE (source alias `s`, target `t`) as each engine's builder takes it: the join; matched rows
    the change deletes (`delete_when`), removed, or with `marks` set (a soft delete); the other matched rows
    updated; unmatched ones inserted; after a truncate, the rows the batch does not touch removed, or with
    `truncate_marks` set."""

    on: str
    delete_when: str
    marks: dict[str, str] | None
    update_when: str
    updates: dict[str, str]
    insert_when: str
    values: dict[str, str]
    truncate_marks: dict[str, str] | None


def merge_clauses(changes: BatchChanges, quoted: Callable[[str], str]) -> MergeClauses:
    """The MERGE of `changes`, with column names quoted as the engine's SQL dialect does (`quoted`)."""
    keys = {quoted(k) for k in changes.keys}
    values = {quoted(c): f"s.{quoted(c)}" for c in changes.columns}
    deleted = f"s.{quoted(DELETED)}"
    # A change older than its row by source position leaves the row alone (change_capture.not_older).
    newer = f" AND {not_older(changes.columns, quoted)}" if LSN_COLUMN in changes.columns else ""
    # A soft delete sets the flag and the change's metadata only: a delete carries no data.
    marks = {c: v for c, v in values.items() if c in {quoted(m) for m in METADATA_COLUMNS}}
    return MergeClauses(
        on=" AND ".join(f"t.{quoted(k)} = s.{quoted(k)}" for k in changes.keys),
        delete_when=f"{deleted}{newer}", marks=marks if changes.soft_delete else None,
        update_when=f"NOT {deleted}{newer}", updates={c: v for c, v in values.items() if c not in keys},
        insert_when=f"NOT {deleted}", values=values,
        truncate_marks={quoted(SOFT_DELETE_COLUMN): "true"} if changes.soft_delete else None)


def _object(expr: str) -> str:
    """SQL: whether the VARIANT `expr` is a JSON object (`{}` included).

    A cast to a struct of no fields succeeds for an object alone and reads none of it; `schema_of_variant`
    walked the whole value to say the same, a fifth of a batch's parse."""
    return f"(try_variant_get({expr}, '$', 'struct<>') IS NOT NULL)"


def _unwrap(expr: str) -> str:
    """SQL: the `payload` of a converter's `{"schema": ..., "payload": ...}`, else the VARIANT itself."""
    return (f"CASE WHEN {_object(expr)} AND try_variant_get({expr}, '$.schema', 'variant') IS NOT NULL "
            f"AND try_variant_get({expr}, '$.payload', 'variant') IS NOT NULL "
            f"THEN variant_get({expr}, '$.payload', 'variant') ELSE {expr} END")


def _source(field: str, kind: str = "string") -> str:
    return f"try_variant_get(_env, '$.source.{field}', '{kind}')"


# A change's position in its database's log, as one BIGINT that orders the changes of a row (the replay guard's
# `__lsn`): PostgreSQL's `lsn`; MySQL's and MariaDB's binlog file number, position and row in the event
# (file * 2^40 + pos * 2^8 + row: a binlog position is a 32-bit offset, a file number six digits, an event's rows
# fewer than 256 as far as one row's changes go); Oracle's `scn`; SQL Server's `change_lsn` (its three hex parts,
# VLF sequence : log block : slot, 32:32:16 bits on disk) packed as vlf * 2^40 + block * 2^16 + slot, which orders
# them while the VLF sequence stays below 2^23 and the block below 2^24 (a VLF of 8 GB): a change_lsn beyond either
# has no position and always applies, as changes of other connectors (MongoDB, Db2, ...) do.
_SQL_SERVER_LSN = f"split({_source('change_lsn')}, ':')"
_SQL_SERVER_PARTS = [f"try_cast(conv(get({_SQL_SERVER_LSN}, {i}), 16, 10) AS BIGINT)" for i in range(3)]
_SQL_SERVER_POSITION = (
    f"CASE WHEN {_source('change_lsn')} RLIKE '^[0-9A-Fa-f]{{1,8}}:[0-9A-Fa-f]{{1,8}}:[0-9A-Fa-f]{{1,4}}$' "
    f"AND {_SQL_SERVER_PARTS[0]} < 8388608 AND {_SQL_SERVER_PARTS[1]} < 16777216 "
    f"THEN {_SQL_SERVER_PARTS[0]} * 1099511627776 + {_SQL_SERVER_PARTS[1]} * 65536 + {_SQL_SERVER_PARTS[2]} END")
_POSITION = (
    f"CASE WHEN {_source('connector')} IN ('mysql', 'mariadb') THEN "
    f"try_cast(regexp_extract({_source('file')}, '([0-9]+)$', 1) AS BIGINT) * 1099511627776 "
    f"+ {_source('pos', 'bigint')} * 256 + least(coalesce({_source('row', 'bigint')}, 0), 255) "
    f"WHEN {_source('connector')} = 'oracle' THEN try_cast({_source('scn')} AS BIGINT) "
    f"WHEN {_source('connector')} = 'sqlserver' THEN {_SQL_SERVER_POSITION} "
    f"ELSE {_source('lsn', 'bigint')} END")


def path(column: str) -> str:
    """The JSON path of a top-level field, as a SQL literal ('$["name"]': any name the options accept)."""
    return "'$[\"" + column.replace("\\", "\\\\") + "\"]'"


def parsed(df: DataFrame, capture: ChangeCapture, raw: bool = False) -> DataFrame:
    """The records with `_k` (key), `_row`, `_before`, `_op`, `_ts`, `_lsn` and `_bad` (why the record cannot
    be applied, or null); with `raw`, the key's and value's bytes as `_raw_key` and `_raw_value` (a registry
    format's undecoded bytes, or the decoded value as JSON)."""
    from pyspark.sql import functions as F

    decoded = {c for c in ("key", "value") if not _bytes(df, c)}
    errors = [c for c in DECODE_ERRORS if c in df.columns]
    kept = [F.expr(_raw_bytes(df, c, c in decoded)).alias(f"_raw_{c}") for c in ("key", "value")] if raw else []
    base = df.select("topic", "partition", "offset", "timestamp", "key", "value", *errors, *kept,
                     F.expr(_variant("key", "key" in decoded)).alias("_kj"),
                     F.expr(_variant("value", "value" in decoded)).alias("_v"))
    base = base.withColumn("_k", F.expr(_unwrap("_kj"))).withColumn("_env", F.expr(_unwrap("_v")))
    gone = "(value IS NULL OR is_variant_null(_env))"  # a tombstone (or a converter's null payload)
    if capture.debezium:
        op = "try_variant_get(_env, '$.op', 'string')"
        cols = {
            "_op": f"CASE WHEN {gone} THEN 'd' ELSE {op} END",
            "_row": "try_variant_get(_env, '$.after', 'variant')",
            "_before": "try_variant_get(_env, '$.before', 'variant')",
            "_ts": "try_variant_get(_env, '$.source.ts_ms', 'bigint')",
            "_lsn": _POSITION,
        }
        ops = ", ".join(f"'{o}'" for o in DEBEZIUM_OPS)
        upserts = ", ".join(f"'{o}'" for o in UPSERTS)
        bad = (f"CASE WHEN value IS NOT NULL AND _v IS NULL THEN 'the value is not JSON' "
               f"WHEN NOT {gone} AND NOT {_object('_env')} THEN 'the value is not a JSON object' "
               f"WHEN NOT {gone} AND {op} IS NULL THEN 'the value has no op field: not a Debezium change event' "
               f"WHEN NOT {gone} AND {op} NOT IN ({ops}) THEN concat('unknown operation ', {op}) "
               f"WHEN {op} IN ({upserts}) AND NOT {_object('_row')} "
               f"THEN concat('operation ', {op}, ' has no after row') END")
    else:
        cols = {"_op": f"CASE WHEN {gone} THEN 'd' ELSE 'u' END", "_row": "_env",
                "_before": "CAST(NULL AS VARIANT)", "_ts": "unix_millis(timestamp)", "_lsn": "CAST(NULL AS BIGINT)"}
        bad = (f"CASE WHEN value IS NOT NULL AND _v IS NULL THEN 'the value is not JSON' "
               f"WHEN NOT {gone} AND NOT {_object('_env')} THEN 'the value is not a JSON object' END")
    for name, sql in cols.items():
        base = base.withColumn(name, F.expr(sql))
    # a record a registry format did not decode (PERMISSIVE: its value is null, which is no tombstone)
    undecoded = " ".join(f"WHEN {c} IS NOT NULL THEN concat('the {c[:-5]} does not decode: ', {c})" for c in errors)
    if undecoded:
        bad = f"CASE {undecoded} ELSE {bad} END"
    return base.withColumn("_bad", F.expr(bad)).drop(*errors)


def _raw_bytes(df: DataFrame, column: str, decoded: bool) -> str:
    """SQL: a record's key or value as bytes, for a dead letter."""
    if not decoded:
        return f"CAST({column} AS BINARY)"
    as_json = f"CAST(to_json({column}) AS BINARY)"
    kept = RAW_COLUMNS[column]
    return f"coalesce({kept}, {as_json})" if kept in df.columns else as_json


def _bytes(df: DataFrame, column: str) -> bool:
    return _bytes_type(df.schema[column].dataType)


def _bytes_type(kind: DataType) -> bool:
    from pyspark.sql.types import BinaryType, StringType

    return isinstance(kind, (BinaryType, StringType))


def _variant(column: str, decoded: bool) -> str:
    """SQL: the key or value as VARIANT: a registry format's decoded struct as an object (no JSON text made
    between), raw bytes parsed as JSON."""
    return f"to_variant_object({column})" if decoded else f"try_parse_json(CAST({column} AS STRING))"


def batch_changes(df: DataFrame, capture: ChangeCapture, table_schema: StructType | None,
                  value_schema: StructType | None, keep_bad: bool = False) -> BatchChanges:
    """The batch's changes as MERGE source rows (see the module docstring); ChangeEventError names the first
    record that cannot be applied, or with `keep_bad` such records are left out and kept (`BatchChanges.bad`) for
    a dead-letter table. `df` is read once: its parse is cached (BatchChanges.release drops it)."""
    declared = declared_types(df.schema, capture)
    frame = parsed(df, capture, raw=keep_bad)
    # a dead letter keeps the record's timestamp and its bytes (`_raw_*`, cached with the parse); a history row
    # the timestamp
    timestamp = keep_bad or capture.history is not None
    records = frame.drop("value", "_kj", "_v", "_env", *(() if timestamp else ("timestamp",))).persist()
    try:
        return _changes(records, capture, table_schema, value_schema, keep_bad, declared)
    except BaseException:
        records.unpersist()
        raise


def declared_types(schema: StructType, capture: ChangeCapture) -> dict[str, DataType]:
    """The decimal columns a registry format's decoded key and row declare (Debezium's row: the value's `after`;
    upsert's: the value), with the writer's precision and scale. Their values, turned into VARIANT, would show
    each batch's own precision (so the column would be a DOUBLE, and inexact); raw bytes declare nothing."""
    from pyspark.sql.types import DecimalType, StructType

    found: dict[str, DataType] = {}
    names = {f.name for f in schema.fields}
    for column in ("key", "value"):
        if column not in names or _bytes_type(schema[column].dataType):
            continue
        struct: DataType | None = schema[column].dataType
        if column == "value" and capture.debezium:
            struct = field_type(struct, "after") if isinstance(struct, StructType) else None
        if isinstance(struct, StructType):
            found.update({f.name: f.dataType for f in struct.fields if isinstance(f.dataType, DecimalType)})
    return found


def _changes(records: DataFrame, capture: ChangeCapture, table_schema: StructType | None,
             value_schema: StructType | None, keep_bad: bool,
             declared: dict[str, DataType] | None = None) -> BatchChanges:
    from pyspark.sql import functions as F

    # Two passes read the records (the summary, the MERGE's rows; a third names a keyless record when the MERGE
    # refuses one): the JSON is parsed by the first, which caches the parsed columns.
    summary = records.agg(
        F.count(F.lit(1)).alias("records"),
        F.expr("schema_of_variant_agg(CASE WHEN _bad IS NULL AND _op IN ('c', 'r', 'u') THEN _row END)")
        .alias("rows"),
        F.expr(f"schema_of_variant_agg(CASE WHEN {_object('_k')} THEN _k END)").alias("keys"),
        F.expr("min(CASE WHEN _bad IS NOT NULL THEN struct(partition, offset, topic, _bad) END)").alias("bad"),
        F.count_if(F.col("_bad").isNotNull()).alias("bad_count"),
        F.expr("collect_list(CASE WHEN _bad IS NULL AND _op = 't' THEN struct(partition, offset) END)").alias("t"),
    ).first()
    assert summary is not None  # an aggregation without grouping has one row
    if summary["bad"] is not None and not keep_bad:
        first = summary["bad"]
        raise _record_error(first["topic"], first["partition"], first["offset"], first["_bad"])
    known = {**(declared or {}), **known_types(table_schema, value_schema)}
    inferred_rows = _struct(summary["rows"])
    keys = capture.key_columns or tuple(f.name for f in _struct(summary["keys"]).fields)
    if not keys and summary["records"]:
        raise ConfigError("cdc: the record keys are not JSON objects, so they name no key columns; give "
                          "key_columns (--key-columns)")
    inferred_keys = {f.name: f.dataType for f in _struct(summary["keys"]).fields}
    key_types = {k: first_type(known.get(k), inferred_keys.get(k), field_type(inferred_rows, k)) for k in keys}
    data = data_columns(keys, inferred_rows, known, table_schema)
    truncates: dict[int, int] = {}
    for t in summary["t"]:
        truncates[t["partition"]] = max(t["offset"], truncates.get(t["partition"], -1))
    rows = records.where("_bad IS NULL AND _op <> 't'")
    if truncates:
        # A truncate supersedes its partition's earlier changes (their rows are gone with the table's).
        earlier = " OR ".join(f"(partition = {p} AND offset < {o})" for p, o in sorted(truncates.items()))
        rows = rows.where(f"NOT ({earlier})")
    single = len(keys) == 1
    for k, kind in key_types.items():
        rows = rows.withColumn(f"_key_{keys.index(k)}", F.expr(_key_sql(k, kind.simpleString(), single)))
    key_cols = [f"_key_{i}" for i in range(len(keys))]
    missing = " OR ".join(f"{c} IS NULL" for c in key_cols)
    keyless = rows.where(missing).select("topic", "partition", "offset")
    bad, dead_letters = None, 0
    if keep_bad:
        # Keyless records go with the rest of the bad ones: the MERGE never meets one.
        no_key = f"no value for the key column(s) {', '.join(keys)}"
        bad = (records.where("_bad IS NOT NULL").withColumn("error", F.col("_bad"))
               .unionByName(rows.where(missing).withColumn("error", F.lit(no_key)).drop(*key_cols))
               .select(*DEAD_LETTER_SOURCE, "error"))
        dead_letters = int(summary["bad_count"]) + (keyless.count() if summary["records"] else 0)
        rows = rows.where(f"NOT ({missing})")
    history = _history(records, capture, keys, key_types, data, missing) if capture.history else None
    from pyspark.sql.window import Window

    latest = Window.partitionBy(*key_cols).orderBy(F.col("partition").desc(), F.col("offset").desc())
    rows = rows.withColumn("_last", F.row_number().over(latest)).where("_last = 1")
    # Keyless records share the null key: one of them is left, and its key column raises as the MERGE's job reads
    # it. Nothing is committed; BatchChanges.refused then names the first such record.
    out = [F.when(F.expr(missing), F.raise_error(F.lit(KEYLESS))).otherwise(F.col(key_cols[0])).alias(keys[0])]
    out += [F.col(c).alias(k) for c, k in list(zip(key_cols, keys, strict=True))[1:]]
    out += [F.expr(f"variant_get(_row, {path(name)}, '{kind.simpleString()}')").alias(name)
            for name, kind in data]
    if capture.metadata:
        out += [F.col("_op").alias(OP_COLUMN), F.col("_ts").alias(SOURCE_TS_COLUMN), F.col("_lsn").alias(LSN_COLUMN)]
    if capture.soft_delete:
        out.append(F.expr("_op = 'd'").alias(SOFT_DELETE_COLUMN))
    out.append(F.expr("_op = 'd'").alias(DELETED))
    columns = (*keys, *(name for name, _ in data),
               *((OP_COLUMN, SOURCE_TS_COLUMN, LSN_COLUMN) if capture.metadata else ()),
               *((SOFT_DELETE_COLUMN,) if capture.soft_delete else ()))
    return BatchChanges(rows.select(*out), keys, columns, bool(truncates), int(summary["records"]),
                        capture.soft_delete, records, keyless, bad, dead_letters, history)


def _history(records: DataFrame, capture: ChangeCapture, keys: tuple[str, ...], key_types: dict[str, DataType],
             data: list[tuple[str, DataType]], missing: str) -> DataFrame:
    """Every change of the batch as a history row: the record's coordinates, the key and the row (a delete's
    `before`), the operation and the source position. Keyless changes are left out (errors or dead letters)."""
    from pyspark.sql import functions as F

    single = len(keys) == 1
    valid = records.where("_bad IS NULL")
    for k, kind in key_types.items():
        valid = valid.withColumn(f"_key_{keys.index(k)}", F.expr(_key_sql(k, kind.simpleString(), single)))
    # a delete's row is its `before`: its `after` is JSON null, a VARIANT that is not SQL's NULL
    image = "CASE WHEN _row IS NULL OR is_variant_null(_row) THEN _before ELSE _row END"
    return valid.where(f"_op = 't' OR NOT ({missing})").select(
        "topic", "partition", "offset", "timestamp",
        *(F.col(f"_key_{i}").alias(k) for i, k in enumerate(keys)),
        *(F.expr(f"try_variant_get({image}, {path(name)}, '{kind.simpleString()}')").alias(name)
          for name, kind in data),
        F.col("_op").alias(OP_COLUMN), F.col("_ts").alias(SOURCE_TS_COLUMN), F.col("_lsn").alias(LSN_COLUMN))


def _key_sql(column: str, kind: str, single: bool) -> str:
    """SQL: a key column's value, from the key's field, else the row's (or `before`'s); for a single key
    column, a key that is a JSON scalar or not JSON at all (plain text) is the value itself."""
    found = [f"CASE WHEN {_object('_k')} THEN try_variant_get(_k, {path(column)}, '{kind}') END",
             f"try_variant_get(_row, {path(column)}, '{kind}')", f"try_variant_get(_before, {path(column)}, '{kind}')"]
    if single:
        found.append(f"CASE WHEN key IS NOT NULL AND NOT {_object('_k')} THEN coalesce("
                     f"try_variant_get(_k, '$', '{kind}'), try_cast(CAST(key AS STRING) AS {kind})) END")
    return f"coalesce({', '.join(found)})"


def _record_error(topic: str, partition: int, offset: int, reason: str) -> ChangeEventError:
    return ChangeEventError(
        f"topic {topic!r} [{partition}] offset {offset}: {reason}; nothing of this batch was committed",
        topic, partition, offset, reason)


def first_type(*kinds: DataType | None) -> DataType:
    """The first of `kinds` that is a type of values (STRING when none is)."""
    from pyspark.sql.types import NullType, StringType

    return next((k for k in kinds if k is not None and not isinstance(k, NullType)), StringType())


def _struct(ddl: str | None) -> StructType:
    """The struct a `schema_of_variant_agg` result describes (empty for no objects), with Spark types a table
    keeps (`_stable`); a top-level field that was always null stays, as NULL (its value is set when the column
    has a type: the table's or `value_schema`'s)."""
    from pyspark.sql.types import DataType, NullType, StructField, StructType

    if not ddl or not ddl.startswith("OBJECT<"):
        return StructType([])
    # schema_of_variant names a JSON object OBJECT<...>; Spark's DDL parser reads the same as STRUCT<...>.
    parsed = DataType.fromDDL("STRUCT<" + ddl[len("OBJECT<"):].replace(" OBJECT<", " STRUCT<")
                              .replace("<OBJECT<", "<STRUCT<"))
    assert isinstance(parsed, StructType)
    return StructType([StructField(f.name, _stable(f.dataType) or NullType(), True) for f in parsed.fields])


def _stable(kind: DataType) -> DataType | None:
    """The type a column of values of `kind` gets: DOUBLE for JSON numbers with a fraction (a batch's DECIMAL
    precision is that batch's), STRING for values of mixed types, none for a field that was always null."""
    from pyspark.sql.types import ArrayType, DecimalType, DoubleType, NullType, StringType, StructField, StructType

    if isinstance(kind, NullType):
        return None
    if isinstance(kind, DecimalType):
        return DoubleType()
    if isinstance(kind, StructType):
        fields = [(f.name, _stable(f.dataType)) for f in kind.fields]
        return StructType([StructField(n, t, True) for n, t in fields if t is not None])
    if isinstance(kind, ArrayType):
        inner = _stable(kind.elementType)
        return ArrayType(inner if inner is not None else StringType(), True)
    if kind.typeName() == "variant":
        return StringType()
    return kind


def known_types(table_schema: StructType | None, value_schema: StructType | None) -> dict[str, DataType]:
    known = {f.name: f.dataType for f in (table_schema.fields if table_schema is not None else [])}
    known.update({f.name: f.dataType for f in (value_schema.fields if value_schema is not None else [])})
    return known


def field_type(struct: StructType, name: str) -> DataType | None:
    return next((f.dataType for f in struct.fields if f.name == name), None)


def data_columns(keys: Sequence[str], inferred: StructType, known: dict[str, DataType],
                  table_schema: StructType | None) -> list[tuple[str, Any]]:
    """The non-key columns the batch's rows set, with their types: the table's columns first, in its order. A
    field that was null in every row and has no known type is left out (no column can be made of it yet)."""
    from pyspark.sql.types import NullType

    present = {f.name: f.dataType for f in inferred.fields}
    order = [f.name for f in table_schema.fields] if table_schema is not None else []
    order += [name for name in present if name not in order]
    typed = [(name, known.get(name) or present[name]) for name in order if name not in keys and name in present]
    return [(name, kind) for name, kind in typed if not isinstance(kind, NullType)]

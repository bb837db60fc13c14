"""A change stream's batch reduced in the read tasks: each task's last change per key, typed, as Arrow.

The `directWriteTo` writer (spark/source/direct_write.py) of a change stream's direct MERGE: each task decodes
its range's Debezium envelopes (or upsert rows) with msgspec's typed JSON decoder, keeps the last change of
each record key in offset order, and yields one row: those changes as an Arrow IPC stream (`CHANGE_ROWS_DDL`),
the JSON kinds every row showed per column (the driver types a column by all of the batch's rows, as Spark's
`schema_of_variant_agg` does), its record count and a sketch of its records' timestamps.

The task is sure of what it yields or yields nothing: a record it cannot read exactly as the SQL parse in
delta/changes.py does (not JSON, no key object, a nested or out-of-range value, a truncate, an unknown
operation, keys taken from the row, an unusual source position, ...) stops it with `unsure` naming the record,
and the driver applies the batch through that SQL parse instead, which gives the error, the dead letter or
the row. So the SQL parse stays the definition; this is its fast path for the common case.

Deduplication is by the record key's bytes: equal bytes are the same key, and the driver keeps the last of
keys that differ in bytes only (whitespace, field order) once it has typed them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import msgspec
import pyarrow as pa

from kafka_spark.sink.freshness import TimestampSketch

CHANGE_ROWS_DDL = "changes binary, kinds string, records long, unsure string, timestamps string"
CHANGE_ROWS_SCHEMA = pa.schema([
    pa.field("changes", pa.binary()), pa.field("kinds", pa.string()), pa.field("records", pa.int64()),
    pa.field("unsure", pa.string()), pa.field("timestamps", pa.string()),
])
# The IPC stream's own columns; key columns are `k:<name>`, row columns `r:<name>`.
PARTITION, OFFSET, OP, TS, LSN = "_p", "_o", "_op", "_ts", "_lsn"
KEY_PREFIX, ROW_PREFIX = "k:", "r:"

# A value the SQL parse would type as a scalar column: JSON null, boolean, 64-bit integer, number, string.
# Anything else (an object, an array, an integer beyond BIGINT) fails the typed decode: unsure.
_Long = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Scalar = None | bool | _Long | float | str
_Row = dict[str, _Scalar]
KIND_NAMES = {type(None): "null", bool: "bool", int: "long", float: "double", str: "string"}


class _Source(msgspec.Struct):
    connector: Any = None
    ts_ms: Any = None
    lsn: Any = None
    file: Any = None
    pos: Any = None
    row: Any = None
    scn: Any = None
    change_lsn: Any = None


class _Envelope(msgspec.Struct):
    """A Debezium change event, or the JSON converter's `{"schema": ..., "payload": ...}` around one."""

    op: str | None = None
    after: _Row | None = None
    source: _Source | None = None
    schema: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    payload: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _Wrapped(msgspec.Struct):
    schema: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    payload: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class Unsure(Exception):
    """A record the task does not read exactly as the SQL parse would: the batch goes to it."""


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_ROW = msgspec.json.Decoder(_Row)
_WRAPPED = msgspec.json.Decoder(_Wrapped)
_NULL = b"null"
# msgspec raises UnicodeDecodeError for bytes that are not UTF-8 (SQL's CAST to STRING replaces them instead)
_JSON_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)
_UPSERTS = frozenset("cru")
_SQL_SERVER_LSN = re.compile(r"^[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,4}$")
_DIGITS = re.compile(r"^[0-9]{1,18}$")
_FILE_NUMBER = re.compile(r"([0-9]+)$")
_LINE_ENDS = ("\n", "\r", "\u0085", "\u2028", "\u2029")


class ChangeSpec(msgspec.Struct, frozen=True):
    """What the tasks need: the mode ("debezium" or "upsert"), the key columns given (none: the key object's
    fields) and whether the change's source timestamp and position are wanted (`metadata`)."""

    mode: str
    key_columns: tuple[str, ...] = ()
    metadata: bool = False


def read_changes(batches: Iterable[pa.RecordBatch], r: Any, spec: str, secret: str | None
                 ) -> Iterator[pa.RecordBatch]:
    """The `directWriteTo` writer: one task's range (`r`, an OffsetRange) as its last change per key."""
    del secret  # a read of changes writes nothing anywhere
    reader = _TaskChanges(msgspec.json.decode(spec, type=ChangeSpec), r.partition)
    try:
        for batch in batches:
            reader.add(batch)
        row = reader.result()
    except Unsure as exc:
        row = {"changes": None, "kinds": None, "records": reader.records, "unsure": str(exc), "timestamps": None}
    yield pa.RecordBatch.from_pylist([row], schema=CHANGE_ROWS_SCHEMA)


class _TaskChanges:
    def __init__(self, spec: ChangeSpec, partition: int) -> None:
        self.spec, self.partition = spec, partition
        self.debezium = spec.mode == "debezium"
        self.records = 0
        # raw key -> (offset, op, row, source timestamp, position)
        self.last: dict[bytes, tuple[int, str, dict[str, Any] | None, int | None, int | None]] = {}
        self.shapes: set[tuple[tuple[str, ...], tuple[type, ...]]] = set()
        self.sketch = TimestampSketch()

    def add(self, batch: pa.RecordBatch) -> None:
        self.sketch.add_column(batch.column("timestamp"))
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        offsets = batch.column("offset").to_pylist()
        millis = _millis(batch.column("timestamp")) if not self.debezium else None
        last, shapes = self.last, self.shapes
        self.records += batch.num_rows
        for i, (key, value, offset) in enumerate(zip(keys, values, offsets, strict=True)):
            if key is None:
                raise Unsure(f"offset {offset}: a record without a key")
            if self.debezium:
                change = self._debezium(value, offset)
            else:
                change = self._upsert(value, offset, None if millis is None else millis[i])
            row = change[2]
            if row is not None and change[1] != "d":
                shapes.add((tuple(row), tuple(map(type, row.values()))))
            last[key] = change

    def _debezium(self, value: bytes | None, offset: int
                  ) -> tuple[int, str, dict[str, Any] | None, int | None, int | None]:
        if value is None:
            return offset, "d", None, None, None
        try:
            env = _ENVELOPE.decode(value)
            if env.schema is not msgspec.UNSET and env.payload is not msgspec.UNSET:
                if bytes(env.payload).strip() == _NULL:
                    return offset, "d", None, None, None
                env = _ENVELOPE.decode(env.payload)
        except _JSON_ERRORS as exc:
            raise Unsure(f"offset {offset}: {exc}") from None
        op = env.op
        if op == "d":
            row = None
        elif op in _UPSERTS:
            row = env.after
            if row is None:
                raise Unsure(f"offset {offset}: operation {op} has no after row")
        else:
            raise Unsure(f"offset {offset}: operation {op!r}")
        ts = lsn = None
        if self.spec.metadata and env.source is not None:
            ts, lsn = _bigint(env.source.ts_ms, offset), position(env.source, offset)
        return offset, op, row, ts, lsn

    def _upsert(self, value: bytes | None, offset: int, millis: int | None
                ) -> tuple[int, str, dict[str, Any] | None, int | None, int | None]:
        if value is None:
            return offset, "d", None, millis, None
        try:
            row = _object(value)
        except Unsure as exc:
            raise Unsure(f"offset {offset}: {exc}") from None
        return offset, ("d" if row is None else "u"), row, millis, None

    def result(self) -> dict[str, Any]:
        """The task's row: its last changes as Arrow IPC, the kinds of every row's columns and of the keys."""
        names = self.spec.key_columns
        key_rows: list[dict[str, Any]] = []
        for raw in self.last:
            key_rows.append(_key_object(raw))
        key_names = names or tuple(sorted({n for k in key_rows for n in k}))
        if any(k.get(n) is None for k in key_rows for n in key_names):
            # the SQL parse then reads the key column from the row
            raise Unsure("a record key without a value for every key column")
        changes = list(self.last.values())
        columns: dict[str, pa.Array] = {
            PARTITION: pa.array([self.partition] * len(changes), pa.int32()),
            OFFSET: pa.array([c[0] for c in changes], pa.int64()),
            OP: pa.array([c[1] for c in changes], pa.string()),
            TS: pa.array([c[3] for c in changes], pa.int64()),
            LSN: pa.array([c[4] for c in changes], pa.int64()),
        }
        key_kinds = {n: sorted({KIND_NAMES[type(k.get(n))] for k in key_rows}) for n in key_names}
        for n in key_names:
            columns[KEY_PREFIX + n] = _column([k.get(n) for k in key_rows], key_kinds[n], f"key column {n}")
        row_kinds: dict[str, set[str]] = {}
        for fields, types in self.shapes:
            for name, kind in zip(fields, types, strict=True):
                row_kinds.setdefault(name, set()).add(KIND_NAMES[kind])
        rows = [c[2] for c in changes]
        for name, seen in row_kinds.items():
            values = [None if row is None else row.get(name) for row in rows]
            columns[ROW_PREFIX + name] = _column(values, sorted(seen), f"column {name}")
        table = pa.table(columns)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        found = {"k": key_kinds, "r": {n: sorted(k) for n, k in row_kinds.items()}}
        return {"changes": sink.getvalue().to_pybytes(), "kinds": json.dumps(found), "records": self.records,
                "unsure": None, "timestamps": self.sketch.to_json() if self.sketch.points.size else None}


def _object(raw: bytes) -> dict[str, Any] | None:
    """A JSON object of scalars, unwrapped from the converter's `{"schema": ..., "payload": ...}` (None: its
    payload is null)."""
    try:
        found = _ROW.decode(raw)
    except msgspec.ValidationError:  # JSON, but not an object of scalars (ValidationError is a DecodeError)
        try:
            wrapped = _WRAPPED.decode(raw)
            if wrapped.schema is msgspec.UNSET or wrapped.payload is msgspec.UNSET:
                raise Unsure("not a JSON object of scalars") from None
            if bytes(wrapped.payload).strip() == _NULL:
                return None
            return _ROW.decode(wrapped.payload)
        except _JSON_ERRORS as exc:
            raise Unsure(f"not a JSON object of scalars ({exc})") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise Unsure(f"not JSON ({exc})") from None
    if "schema" in found and "payload" in found:
        raise Unsure("a converter's envelope whose payload is not an object")
    return found


def _key_object(raw: bytes) -> dict[str, Any]:
    """A record key's JSON object of scalars."""
    try:
        found = _object(raw)
    except Unsure as exc:
        raise Unsure(f"a record key: {exc}") from None
    if found is None:
        raise Unsure("a record key whose payload is null")
    return found


_ARROW_KINDS = {("long",): pa.int64(), ("double",): pa.float64(), ("double", "long"): pa.float64(),
                ("string",): pa.string(), ("bool",): pa.bool_(), (): pa.null()}


def _column(values: list[Any], kinds: list[str], what: str) -> pa.Array:
    """The values as the Arrow type their JSON kinds give (nulls aside); mixed kinds are unsure."""
    wanted = _ARROW_KINDS.get(tuple(k for k in kinds if k != "null"))
    if wanted is None:
        raise Unsure(f"{what} holds values of several JSON types ({', '.join(kinds)})")
    return pa.array(values, wanted)


def _millis(column: pa.Array) -> list[int | None]:
    """A Kafka timestamp column as epoch milliseconds (SQL's unix_millis: floored)."""
    unit = column.type.unit
    values = column.cast(pa.int64()).to_pylist()
    per = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    return [None if v is None else (v * 1000 if per is None else v // per) for v in values]


def _bigint(value: Any, offset: int) -> int | None:
    """A source field as the SQL parse's `try_variant_get(..., 'bigint')` reads it, where that is plain."""
    if value is None or (type(value) is int and -(2**63) <= value < 2**63):
        return value
    raise Unsure(f"offset {offset}: a source field that is not an integer ({value!r})")


def position(source: _Source, offset: int) -> int | None:
    """The change's position in its database's log as one BIGINT: delta/changes.py's `_POSITION`, for the
    values it reads plainly (integers, digit strings); anything else is unsure."""
    connector = source.connector
    if connector is not None and not isinstance(connector, str):
        raise Unsure(f"offset {offset}: source.connector is not a string")
    if connector in ("mysql", "mariadb"):
        file, pos, row = source.file, _bigint(source.pos, offset), _bigint(source.row, offset)
        if file is not None and not isinstance(file, str):
            raise Unsure(f"offset {offset}: source.file is not a string")
        number = _FILE_NUMBER.search(file) if file is not None else None
        if number is not None and not _DIGITS.match(number.group(1)):
            raise Unsure(f"offset {offset}: a binlog file number of {len(number.group(1))} digits")
        if number is None or pos is None:
            return None
        found = int(number.group(1)) * 2**40 + pos * 256 + min(row or 0, 255)
        if not -(2**63) <= found < 2**63:
            raise Unsure(f"offset {offset}: a binlog position beyond BIGINT")
        return found
    if connector == "oracle":
        scn = source.scn
        if scn is None:
            return None
        text = str(scn) if type(scn) is int else scn
        if not isinstance(text, str) or not _DIGITS.match(text):
            raise Unsure(f"offset {offset}: an Oracle scn that is not a plain number ({scn!r})")
        return int(text)
    if connector == "sqlserver":
        lsn = source.change_lsn
        if lsn is None:
            return None
        if not isinstance(lsn, str):
            raise Unsure(f"offset {offset}: a SQL Server change_lsn that is not a string")
        if not _SQL_SERVER_LSN.match(lsn) or lsn[-1:] == "\n":
            if lsn[-1:] in _LINE_ENDS:  # Java's `$` matches before a last line terminator, Python's before \n only
                raise Unsure(f"offset {offset}: a SQL Server change_lsn ending in a line break")
            return None
        vlf, block, slot = (int(part, 16) for part in lsn.split(":"))
        return vlf * 2**40 + block * 2**16 + slot if vlf < 2**23 and block < 2**24 else None
    return _bigint(source.lsn, offset)



"""A fetched Arrow batch with its keys and values decoded in place, in the task that fetched it.

`key`/`value` become the decoded columns. A record that does not decode (framing, unknown id, corrupt
payload, a schema the query cannot read) fails the task with PayloadError naming topic, partition and
offset (`mode` FAILFAST), or (PERMISSIVE) keeps a null there, with the reason in `keyError`/`valueError`
and the record's original bytes in `rawKey` and `rawValue`. A null key or value (a tombstone) stays null.
A registry that cannot be asked (down, refusing the credentials) is no fault of the record: the task fails
with SchemaRegistryError, whatever the mode, and Spark's retry of the task reads the records again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_spark.errors import PayloadError, SchemaChangedError, SchemaRegistryError
from kafka_spark.formats.cache import BoundedCache
from kafka_spark.formats.groups import Group, framed_groups
from kafka_spark.formats.model import is_not_found
from kafka_spark.formats.options import PayloadOptions
from kafka_spark.formats.plan import PayloadPlan, SidePlan, column_type, decoder_for
from kafka_spark.formats.registry.client import registry_for
from kafka_spark.formats.registry.settings import RegistrySettings
from kafka_spark.formats.registry.wire import split

ERROR_COLUMN = {"key": "keyError", "value": "valueError"}
RAW_COLUMN = {"key": "rawKey", "value": "rawValue"}


def extra_fields(plan: PayloadPlan) -> list[pa.Field]:
    """The columns a PERMISSIVE read adds after the source's own: each decoded side's error, then the raw bytes."""
    if not plan.options.permissive:
        return []
    names = [s.format.side for s in plan.sides]
    return ([pa.field(ERROR_COLUMN[n], pa.string()) for n in names]
            + [pa.field(RAW_COLUMN[n], pa.binary()) for n in ("key", "value")])


def decoded_types(plan: PayloadPlan) -> dict[str, pa.DataType]:
    """`key`/`value` -> the Arrow type of its decoded column, for the decoded sides."""
    return {s.format.side: column_type(s, plan.options) for s in plan.sides}


def decode_batch(batch: pa.RecordBatch, plan: PayloadPlan) -> pa.RecordBatch:
    """`batch` (Spark's Kafka columns) with the plan's sides decoded and, when PERMISSIVE, the extra columns."""
    names, columns = list(batch.schema.names), list(batch.columns)
    errors: dict[str, list[str | None] | None] = {}
    for side in plan.sides:
        name = side.format.side
        at = names.index(name)
        columns[at], errors[name] = _decode_side(batch, batch.column(at), side, plan.options)
        names[at] = name
    if plan.options.permissive:
        bad = [any(errs is not None and errs[i] is not None for errs in errors.values())
               for i in range(batch.num_rows)]
        for side in plan.sides:
            name = side.format.side
            names.append(ERROR_COLUMN[name])
            columns.append(pa.array(errors[name] or [None] * batch.num_rows, pa.string()))
        for name in ("key", "value"):
            names.append(RAW_COLUMN[name])
            columns.append(_only(batch.column(name), bad))
    return pa.RecordBatch.from_arrays(columns, names=names)


def _only(raw: pa.Array, keep: list[bool]) -> pa.Array:
    # The original bytes of the bad records only: good ones would carry their payload twice.
    if not any(keep):
        return pa.nulls(len(raw), pa.binary())
    import pyarrow.compute as pc

    return pc.if_else(pa.array(keep), raw, pa.scalar(None, pa.binary()))


def _decode_side(batch: pa.RecordBatch, column: pa.Array, plan: SidePlan,
                 options: PayloadOptions) -> tuple[pa.Array, list[str | None] | None]:
    decoder = decoder_for(plan, options)
    protobuf = plan.format.format == "protobuf"
    reader_id = plan.reader.id
    errors: list[str | None] | None = None

    def bad(row: int, exc: PayloadError) -> None:
        nonlocal errors
        if not options.permissive:
            side = plan.format.side
            raise PayloadError(f"{_where(batch, row)}: the {side} does not decode with {plan.describe()}: "
                               f"{exc}. Set mode=PERMISSIVE to keep such records with the reason in "
                               f"{ERROR_COLUMN[side]}, or send them to a dead-letter table.") from None
        if errors is None:
            errors = [None] * len(column)
        errors[row] = str(exc)

    # Groups decode column-wise first; what they leave is decoded here per record, in row order, so the first
    # error raised is the one this loop alone would raise (a column-decoded record raises none)
    blocks, rest, deferred = _blocks(batch, column, plan, options, decoder)
    rows = range(len(column)) if rest is None else rest.tolist()
    raws = column.to_pylist() if rest is None else column.take(rest).to_pylist()
    values: list[Any] = [None] * len(raws)
    for at, (row, raw) in enumerate(zip(rows, raws, strict=True)):
        if raw is None:
            continue
        try:
            schema_id, indexes, payload = split(raw, protobuf)
        except PayloadError as exc:
            bad(row, exc)
            continue
        try:
            if row in deferred:
                raise deferred[row]  # met first by the column-wise pass: raised here, in row order
            if schema_id != reader_id and options.restart_on_new_schema:
                _refuse_newer(plan, options, schema_id, batch, row)
            values[at] = decoder.decode(schema_id, indexes, bytes(payload))
        except PayloadError as exc:
            bad(row, exc)
        except SchemaRegistryError as exc:
            # the registry failed, not the record: fail the task (Spark retries it) rather than null the value
            raise SchemaRegistryError(f"{_where(batch, row)}: cannot look up the {plan.format.side}'s schema id "
                                      f"{schema_id}: {exc}", exc.status, exc.error_code) from None
    try:
        decoded = pa.array(values, type=decoder.arrow_type)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        # A decoded value the column cannot hold (JSON's "\ud800", a lone surrogate, is a str that UTF-8 cannot
        # encode): that record is bad like one that does not decode, the others stand. When no value alone is at
        # fault, the column as a whole is.
        if not _drop_misfits(values, rows, decoder.arrow_type, bad):
            raise PayloadError(f"{_where(batch, 0)}: decoded {plan.format.side}s do not build the column type "
                               f"{decoder.arrow_type}: {exc}") from None
        decoded = pa.array(values, type=decoder.arrow_type)
    if rest is None:
        return decoded, errors
    return _merge(len(column), blocks, rest, decoded), errors


def _drop_misfits(values: list[Any], rows: Sequence[int], arrow_type: pa.DataType,
                  bad: Callable[[int, PayloadError], None]) -> bool:
    """Null each value that `arrow_type` cannot hold, reporting it to `bad` by its row; whether any was."""
    found = False
    for at, row in enumerate(rows):
        if values[at] is None:
            continue
        try:
            pa.array([values[at]], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            values[at] = None
            found = True
            bad(row, PayloadError(f"the decoded value does not fit the column type {arrow_type}: {exc}"))
    return found


def _blocks(batch: pa.RecordBatch, column: pa.Array, plan: SidePlan, options: PayloadOptions, decoder: Any
            ) -> tuple[list[tuple[np.ndarray, pa.Array]], np.ndarray | None, dict[int, Exception]]:
    """The records decoded column-wise (rows, values), the rows left to the per-record loop (None: all of them)
    and the errors met at a group's first row, which the loop raises when it reaches that row (asking the
    registry again could answer otherwise)."""
    deferred: dict[int, Exception] = {}
    decode_group = _column_path(plan.format.format, decoder) if isinstance(column, pa.BinaryArray) else None
    if decode_group is None:
        return [], None, deferred
    taken = np.zeros(len(column), dtype=bool)
    blocks: list[tuple[np.ndarray, pa.Array]] = []
    for group, rows in framed_groups(column, plan.format.format == "protobuf").items():
        try:
            if group.schema_id != plan.reader.id and options.restart_on_new_schema:
                _refuse_newer(plan, options, group.schema_id, batch, int(rows[0]))
            # a batch of one schema id (the usual case) is its own group: no copy of the column
            found = decode_group(decoder, group, column if len(rows) == len(column) else column.take(pa.array(rows)))
        except (SchemaChangedError, SchemaRegistryError) as exc:
            deferred[int(rows[0])] = exc
            continue
        except PayloadError:
            continue  # the group's records cannot be read: each gets the reason in the per-record loop
        if found is not None:
            exact, values = found
            taken[rows[exact]] = True
            blocks.append((rows[exact], values))
    if not blocks:
        return [], None, deferred
    return blocks, np.flatnonzero(~taken), deferred


def _column_path(fmt: str, decoder: Any
                 ) -> Callable[[Any, Group, pa.Array], tuple[np.ndarray, pa.Array] | None] | None:
    """The format's column-wise decoder of one group, or None when it is not installed, is switched off
    (KAFKA_SPARK_AVRO_BLOCK, KAFKA_SPARK_PROTOBUF_BLOCK or KAFKA_SPARK_JSON_SCHEMA_BLOCK set to 0) or cannot serve
    `decoder` (JSON Schema with validation)."""
    if fmt == "avro":
        from kafka_spark.formats.avro import columnar as avro

        if not avro.block_path_on():
            return None
        return lambda decoder, group, framed: avro.decode_group(decoder, group.schema_id, framed)
    if fmt == "protobuf":
        from kafka_spark.formats.protobuf import columnar as protobuf

        return protobuf.decode_group if protobuf.block_path_on() else None
    from kafka_spark.formats.json_schema import columnar as json_schema

    return json_schema.decode_group if json_schema.block_path_on(decoder) else None


def _merge(size: int, blocks: list[tuple[np.ndarray, pa.Array]], rest: np.ndarray, decoded: pa.Array) -> pa.Array:
    """One column of `size` rows from the column-wise groups and the per-record values of the `rest` rows."""
    if len(blocks) == 1 and len(blocks[0][1]) == size:
        return blocks[0][1]  # every row from one group, in order: nothing to put in place
    parts = [values for _, values in blocks] + [decoded]
    where = np.empty(size, dtype=np.int64)
    at = 0
    for rows, values in blocks:
        where[rows] = np.arange(at, at + len(values))
        at += len(values)
    where[rest] = np.arange(at, at + len(rest))
    return pa.concat_arrays(parts).take(pa.array(where))


def _where(batch: pa.RecordBatch, row: int) -> str:
    def cell(name: str) -> Any:
        return batch.column(name)[row].as_py() if name in batch.schema.names else "?"

    return f"{cell('topic')} [{cell('partition')}] offset {cell('offset')}"


_checked: BoundedCache[tuple[RegistrySettings, SidePlan, int], bool] = BoundedCache()


def _refuse_newer(plan: SidePlan, options: PayloadOptions, schema_id: int, batch: pa.RecordBatch, row: int) -> None:
    """SchemaChangedError when `schema_id` is a later version of the query's subject than the query's own."""
    key = (options.registry, plan, schema_id)
    newer = _checked.get(key)
    if newer is None:
        try:
            held = registry_for(options.registry).subject_versions(schema_id)
        except SchemaRegistryError as exc:
            if not is_not_found(exc):
                raise
            # no such id: not a newer version, and the decoder makes the unknown id this record's error
            held = []
        versions = [v for s, v in held if s == plan.reader.subject]
        newer = _checked.put(key, bool(versions) and plan.reader.version is not None
                             and max(versions) > plan.reader.version)
    if newer:
        raise SchemaChangedError(
            f"{_where(batch, row)}: the {plan.format.side} was written with schema id {schema_id}, a newer version "
            f"of subject {plan.reader.subject!r} than the query's {plan.describe()} (schemaEvolutionMode=restart). "
            "Restart the query to read with the subject's latest schema.")

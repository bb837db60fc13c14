"""The block path of Avro keys and values: a fetched column's records grouped by writer schema id, each group's
well-formed datums decoded column-wise by a native reader and resolved to the query's schema in Arrow.

What it cannot take exactly it leaves, and the caller decodes those records per record as before: records not
in Confluent's framing, datums `skip.exact_datums` refuses, a group whose writer schema the block reader or the
resolution lacks (`resolve.Unsupported`: kept per decoder and schema id, not tried again), and a group on which
the reader fails (a corrupt string, a decimal past its precision, a map naming a key twice: the whole group, each
time).
"""

from __future__ import annotations

import json
import os
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_spark.formats.avro.block import (
    FRAME_FIELD,
    container_parts,
    framed_schema,
    read_container,
    reader_available,
)
from kafka_spark.formats.avro.codec import AvroDecoder, parse_registered
from kafka_spark.formats.avro.guard import risks
from kafka_spark.formats.avro.resolve import Resolver, Unsupported
from kafka_spark.formats.avro.skip import exact_datums
from kafka_spark.formats.avro.types import definition, normalize
from kafka_spark.formats.groups import value_offsets
from kafka_spark.formats.model import RegisteredSchema

_FRAMING = 5
SWITCH = "KAFKA_SPARK_AVRO_BLOCK"
# The decimals DataFusion converts itself (valid ones only, as `normalize` keeps); every other logical type is
# hidden from it and applied in `resolve` as the per-record path applies it.
_NATIVE_LOGICAL = frozenset({("bytes", "decimal"), ("fixed", "decimal")})


@dataclass(frozen=True)
class _Writer:
    schema: Any  # fastavro-parsed, as the per-record path parses it
    named: dict[str, Any]
    container_schema: str  # the JSON written into the container's header
    resolver: Resolver


_writers: weakref.WeakKeyDictionary[AvroDecoder, dict[int, _Writer | str]] = weakref.WeakKeyDictionary()


def block_path_on() -> bool:
    """Whether the block path runs in this process: its native reader is installed, and the environment does
    not turn it off (KAFKA_SPARK_AVRO_BLOCK=0: every record per record, to compare or to rule the reader out)."""
    return os.environ.get(SWITCH, "1") != "0" and reader_available()


def decode_group(decoder: AvroDecoder, schema_id: int, framed: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    """(which of `framed`'s records the block path decoded, their values in the decoder's Arrow type), or None
    when it decoded none. `framed`: binary values, none null, all framed with `schema_id`.

    The writer schema is looked up as the per-record path does, with its errors: PayloadError (the id's records
    cannot be read), SchemaRegistryError (the registry cannot be asked)."""
    writer = _writer(decoder, schema_id)
    if writer is None:
        return None
    offsets = value_offsets(framed)
    data = np.frombuffer(framed.buffers()[2], np.uint8)
    exact = exact_datums(data, offsets[:-1] + _FRAMING, offsets[1:], writer.schema, writer.named)
    if not exact.any():
        return None
    rows = framed if exact.all() else framed.filter(pa.array(exact))
    try:
        # the first record as the per-record path decodes it: the values of reader fields the writer lacks
        sample = decoder.decode(schema_id, (), rows[0].as_py()[_FRAMING:])
        table = read_container(container_parts(writer.container_schema, rows), len(rows))
        if table.num_rows != len(rows):
            return None
        reader = decoder.parsed_reader()[0]
        values = writer.resolver.top(table, writer.schema, reader, decoder.arrow_type, sample)
    except Unsupported as exc:
        _writers.setdefault(decoder, {})[schema_id] = str(exc)
        return None
    except BaseException as exc:  # the record's data (or the reader's panic, a BaseException): per record
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        return None
    if values.type != decoder.arrow_type or len(values) != len(rows):
        return None
    return exact, values


def _writer(decoder: AvroDecoder, schema_id: int) -> _Writer | None:
    """What the block path needs of writer `schema_id`, or None when it cannot take that schema."""
    known = _writers.setdefault(decoder, {})
    found = known.get(schema_id)
    if found is None:
        decoder.prepare(schema_id)  # the per-record path's own lookup and its errors, raised to the caller
        try:
            registered = decoder.writer_text(schema_id)
        except Exception:  # asked again after prepare found it: a registry failure now is not the record's
            return None
        found = known[schema_id] = _prepare(decoder, registered)
    return found if isinstance(found, _Writer) else None


def _prepare(decoder: AvroDecoder, registered: RegisteredSchema | None) -> _Writer | str:
    """The writer's parsed schema, container schema and resolver; or why the block path leaves it."""
    if registered is None or registered.schema_type != "AVRO":
        return "no Avro schema of that id"
    try:
        schema, named = parse_registered(registered)
        container_schema = framed_schema(normalize(json.loads(registered.schema), _NATIVE_LOGICAL))
    except ValueError as exc:
        return str(exc)
    if container_schema is None:
        return f"the writer schema is not a record, or has a field named {FRAME_FIELD}"
    reader, reader_named = decoder.parsed_reader()
    if any(risks(schema, named)) or any(risks(reader, reader_named)):
        return "a recursive schema or one with items of zero bytes"
    gap = _unreadable(schema, named)
    if gap is not None:
        return gap
    return _Writer(schema, named, json.dumps(container_schema), Resolver(named, reader_named))


def _unreadable(schema: Any, named: dict[str, Any]) -> str | None:
    """What in a (non-recursive) writer schema the native reader fails on whatever the data, or None: known here,
    the group is left to the per-record path at once rather than walked and read in vain every batch. Measured
    on DataFusion 55: unions of more than null and one type ("cannot cast" its dense union), fixed(0) and maps of
    null values (columns of the wrong length)."""
    stack, seen = [schema], set()
    while stack:
        node = definition(stack.pop(), named)
        if isinstance(node, list):
            if sum(definition(m, named) != "null" for m in node) > 1:
                return "a union of more than null and one type"
            stack.extend(node)
        elif isinstance(node, dict) and id(node) not in seen:
            seen.add(id(node))
            kind = node["type"]
            if kind == "fixed" and node["size"] == 0:
                return "a fixed of zero bytes"
            if kind == "map" and definition(node["values"], named) == "null":
                return "a map of null values"
            stack.extend([f["type"] for f in node.get("fields", ())])
            stack.extend(node[k] for k in ("items", "values") if k in node)
    return None

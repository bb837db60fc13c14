"""The column-wise path of Protobuf keys and values: a group of payloads (one schema id and one run of message
indexes) parsed by ptars (Rust: from an Arrow binary column straight into Arrow) and converted in Arrow to the
column Spark's `from_protobuf` gives, the one the per-record path (upb, then values.py) builds.

What it cannot take exactly it leaves, and the caller decodes those records per record as before:
- readers it does not cover (column_plan.Unsupported, kept per decoder): messages of files that are not proto3
  (proto2's defaults and closed enums, editions), recursive messages, `Any` as JSON, a time message that is not
  google.protobuf's own, or anything whose ptars column has another type than expected;
- payloads ptars refuses: a chunk that fails is split in two and each half tried again;
- payloads that are not the canonical encoding of what ptars read. Each parsed chunk is written back by ptars and
  compared byte for byte with its payloads: one that comes back identical holds nothing two parsers could read
  differently (no unknown field, no field with another wire type, which the per-record path names, no singular
  field given twice, which protobuf merges, no time outside 1677-2262, ...);
- a map with a key given twice (protobuf keeps the last).

Map entries come sorted by key, as the per-record path sorts them (values.py).
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_spark.errors import PayloadError
from kafka_spark.formats.groups import Group
from kafka_spark.formats.protobuf.codec import ProtobufDecoder
from kafka_spark.formats.protobuf.column_plan import Node, Planner, Unsupported

SWITCH = "KAFKA_SPARK_PROTOBUF_BLOCK"
_LONGEST = (1 << 31) - 1


@dataclass(frozen=True)
class _Prepared:
    handler: Any  # ptars' MessageHandler of the reader message
    root: Node


_prepared: weakref.WeakKeyDictionary[ProtobufDecoder, _Prepared | str] = weakref.WeakKeyDictionary()


def block_path_on() -> bool:
    """Whether the column-wise path runs in this process: ptars is installed, and the environment does not turn
    it off (KAFKA_SPARK_PROTOBUF_BLOCK=0: every record per record)."""
    if os.environ.get(SWITCH, "1") == "0":
        return False
    try:
        import ptars  # noqa: F401
    except ImportError:
        return False
    return True


def decode_group(decoder: ProtobufDecoder, group: Group, framed: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    """(which of `framed`'s records the path decoded, their values in the decoder's Arrow type), or None when it
    decoded none. `framed`: binary values, none null, all framed as `group` says.

    The writer is checked as the per-record path checks it, with its errors: PayloadError (the group's records
    cannot be read), SchemaRegistryError (the registry cannot be asked)."""
    error = decoder.writer_error(group.schema_id, group.indexes)
    if error:
        raise PayloadError(error)
    prepared = _prepare(decoder)
    if prepared is None:
        return None
    payloads = pc.binary_slice(framed, group.start, _LONGEST)
    try:
        chunks = _parse(prepared.handler, payloads)
        if not chunks:
            return None
        exact = np.zeros(len(payloads), dtype=bool)
        parsed = []
        for start, batch in chunks:
            written = prepared.handler.record_batch_to_array(batch)
            same = pc.equal(payloads.slice(start, batch.num_rows), written)
            exact[start:start + batch.num_rows] = np.asarray(same.fill_null(False), dtype=bool)
            parsed.append(pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema)))
        rows = np.concatenate([np.arange(s, s + b.num_rows) for s, b in chunks])
        raw = parsed[0] if len(parsed) == 1 else pa.concat_arrays(parsed)
        values, bad = prepared.root.convert(raw)
    except Unsupported as exc:
        _prepared[decoder] = str(exc)
        return None
    except BaseException as exc:  # a conversion the data breaks (or ptars' panic, a BaseException): per record
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        return None
    keep = exact[rows] if bad is None else exact[rows] & ~bad
    exact[:] = False
    exact[rows[keep]] = True
    if not keep.any() or values.type != decoder.arrow_type:
        return None
    return exact, values if keep.all() else values.filter(pa.array(keep))


def _parse(handler: Any, payloads: pa.Array) -> list[tuple[int, pa.RecordBatch]]:
    """(first row, parsed batch) of the chunks of `payloads` ptars parses. A payload ptars refuses fails its
    whole chunk: the chunk is halved until the refused payloads stand alone, or, when there are many, until
    the payloads parsed in failing chunks come to eight times the group (ptars parses a payload in well under
    an eighth of the time the per-record path takes)."""
    out: list[tuple[int, pa.RecordBatch]] = []
    budget = [8 * len(payloads) + 64]

    def parse(start: int, stop: int) -> None:
        try:
            batch = handler.array_to_record_batch(payloads.slice(start, stop - start))
        except BaseException as exc:  # ptars' panic is a BaseException
            if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
                raise
            batch = None
        if batch is not None and batch.num_rows == stop - start:
            out.append((start, batch))
            return
        budget[0] -= stop - start
        if stop - start > 1 and budget[0] > 0:
            middle = (start + stop) // 2
            parse(start, middle)
            parse(middle, stop)

    parse(0, len(payloads))
    return out


def _prepare(decoder: ProtobufDecoder) -> _Prepared | None:
    found = _prepared.get(decoder)
    if found is None:
        try:
            import ptars

            root = Planner(decoder.options).struct(decoder.descriptor, frozenset(), root=True)
            if root is None or root.arrow != decoder.arrow_type:
                raise Unsupported("the reader's column type is not the per-record path's")
            # nanoseconds: the writer's nanos kept whole, so the written-back payload is the original
            config = ptars.PtarsConfig(timestamp_tz="UTC", timestamp_unit="ns", duration_unit="ns",
                                       enum_repr="int32")
            handler = ptars.HandlerPool([decoder.descriptor.file], config).get_for_message(decoder.descriptor)
            found = _Prepared(handler, root)
        except Unsupported as exc:
            found = str(exc)
        except Exception as exc:  # ptars refuses the schema
            found = f"ptars: {exc}"
        _prepared[decoder] = found
    return found if isinstance(found, _Prepared) else None

"""Avro datums of one writer schema as one in-memory object-container block, read into Arrow by DataFusion.

The container is the header (magic `Obj\\x01`, the metadata map with `avro.schema` and `avro.codec` null, a
sync marker) and one block (count, byte size, the datums back to back, the sync marker). The datums are the
framed Kafka values as they lie in the Arrow column, untouched: the container's schema is the writer's record
with the 5 bytes of Confluent framing read as a first field of fixed size, dropped after the read. No copy of
the values is made before the file's, and no Python loop over records.

DataFusion (the `registry` extra) reads Avro from a path only: the container goes into an anonymous in-memory
file (`memfd_create`), read through `/proc/self/fd`, with a fresh session each time so that no cache of file
metadata outlives the file. Only datums `skip.exact_datums` passed are given to it.
"""

from __future__ import annotations

import functools
import importlib
import os
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_spark.protocol.varint import encode_varint

_SYNC = b"kafka-spark-avro"  # 16 bytes; readers compare it after each block, they never search for it
_FRAMING = 5
FRAME_FIELD = "kafka_spark_frame"


@functools.lru_cache(maxsize=1)
def reader_available() -> bool:
    """Whether the native reader is installed (the `registry` extra); without it every datum is read per record."""
    try:
        _datafusion()
    except ImportError:
        return False
    return True


def _datafusion() -> Any:
    # imported by name, lazily: an optional dependency, and one that neither mypy nor a plain install needs
    return importlib.import_module("datafusion")


def _bytes(value: bytes) -> bytes:
    return encode_varint(len(value)) + value


def framed_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The writer's record with its Confluent framing read as a first field (`FRAME_FIELD`, fixed of 5 bytes), so
    that the framed values are the container's datums as they lie in the column; None when it is not a record or
    has a field of that name already."""
    if schema.get("type") not in ("record", "error") or not isinstance(schema.get("fields"), list):
        return None
    names = {f.get("name") for f in schema["fields"]}
    if FRAME_FIELD in names:
        return None
    frame = {"name": FRAME_FIELD, "type": {"type": "fixed", "name": "KafkaSparkFrame",
                                           "namespace": "kafka_spark.block", "size": _FRAMING}}
    return {**schema, "fields": [frame, *schema["fields"]]}


def container_parts(schema_json: str, framed: pa.Array) -> tuple[bytes, memoryview, bytes]:
    """(header, body, trailer) of the object container holding the values of `framed` (Confluent-framed binary,
    none null) in one block, written with `schema_json` (a `framed_schema`): the body is the column's own bytes."""
    meta = (encode_varint(2) + _bytes(b"avro.schema") + _bytes(schema_json.encode())
            + _bytes(b"avro.codec") + _bytes(b"null"))
    offsets = np.frombuffer(framed.buffers()[1], np.int32, len(framed) + 1, framed.offset * 4)
    first, last = int(offsets[0]), int(offsets[-1])
    data = framed.buffers()[2]
    body = memoryview(data)[first:last] if data is not None else memoryview(b"")
    header = b"Obj\x01" + meta + encode_varint(0) + _SYNC + encode_varint(len(framed)) + encode_varint(last - first)
    return header, body, _SYNC


def read_container(parts: tuple[bytes, memoryview, bytes], rows: int) -> pa.Table:
    """The `rows` records of an object container given in parts, as DataFusion's Avro reader gives them (one
    chunk per column, the frame's column dropped)."""
    datafusion = _datafusion()
    # A block is read on one thread (the task's own core: Spark runs a task per core already) into one batch
    # (DataFusion's default of 8,192 rows costs ~10% more CPU and a concatenation).
    config = datafusion.SessionConfig().with_batch_size(max(8192, rows)).with_target_partitions(1)
    context = datafusion.SessionContext(config)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kafka-spark-avro-block", getattr(os, "MFD_CLOEXEC", 0))
        try:
            with open(fd, "wb", closefd=False) as file:
                for part in parts:
                    file.write(part)
            table = context.read_avro(f"/proc/self/fd/{fd}", file_extension="").to_arrow_table()
        finally:
            os.close(fd)
    else:
        with tempfile.TemporaryDirectory(prefix="kafka-spark-avro-") as folder:
            path = os.path.join(folder, "block.avro")
            with open(path, "wb") as file:
                for part in parts:
                    file.write(part)
            table = context.read_avro(path).to_arrow_table()
    if table.column_names[:1] == [FRAME_FIELD]:
        table = table.drop_columns([FRAME_FIELD])
    return table.combine_chunks()

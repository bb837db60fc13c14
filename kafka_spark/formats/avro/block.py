"""Avro datums of one writer schema as one in-memory object-container block, read into Arrow by DataFusion.

The container is the header (magic `Obj\\x01`, the metadata map with `avro.schema` and `avro.codec` null, a
sync marker) and one block (count, byte size, the datums back to back, the sync marker). The datums are the
framed Kafka values with their 5 bytes of Confluent framing cut off: Arrow kernels move the bytes (a slice and
the buffer they leave), no Python loop over records.

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


def container(schema_json: str, framed: pa.Array) -> bytes:
    """The object container holding the datums of `framed` (Confluent-framed binary values, none null) in one
    block, written with the schema `schema_json`."""
    meta = (encode_varint(2) + _bytes(b"avro.schema") + _bytes(schema_json.encode())
            + _bytes(b"avro.codec") + _bytes(b"null"))
    header = b"Obj\x01" + meta + encode_varint(0) + _SYNC
    offsets = np.frombuffer(framed.buffers()[1], np.int32, len(framed) + 1, framed.offset * 4).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = framed.buffers()[2]
    if data is None or last == first:
        body: Any = b""
    else:
        # One gather of the values' bytes without their 5-byte prefixes (a slice kernel would build a whole
        # second array first).
        keep = np.ones(last - first, dtype=bool)
        keep[((offsets[:-1] - first)[:, None] + np.arange(_FRAMING)).ravel()] = False
        body = np.frombuffer(data, np.uint8, last - first, first)[keep]
    size = (last - first) - _FRAMING * len(framed)
    return b"".join((header, encode_varint(len(framed)), encode_varint(size), body, _SYNC))


def read_container(blob: bytes) -> pa.Table:
    """The records of an object container, as DataFusion's Avro reader gives them (one chunk per column)."""
    datafusion = _datafusion()
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kafka-spark-avro-block", getattr(os, "MFD_CLOEXEC", 0))
        try:
            with open(fd, "wb", closefd=False) as file:
                file.write(blob)
            table = datafusion.SessionContext().read_avro(f"/proc/self/fd/{fd}", file_extension="").to_arrow_table()
        finally:
            os.close(fd)
    else:
        with tempfile.TemporaryDirectory(prefix="kafka-spark-avro-") as folder:
            path = os.path.join(folder, "block.avro")
            with open(path, "wb") as file:
                file.write(blob)
            table = datafusion.SessionContext().read_avro(path).to_arrow_table()
    return table.combine_chunks()

"""Checksums: CRC-32 for v0/v1 messages and CRC-32C (Castagnoli) for v2 batches."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from kafka_spark.errors import CodecUnavailableError

Buffer = bytes | bytearray | memoryview


def _load_crc32c() -> Callable[..., int]:
    # The `crc32c` package uses the CPU's CRC instruction (tens of GB/s); crcmod's C extension is
    # ~50x slower, and without a fast CRC the checksum would cost more than the decoding itself.
    try:
        import crc32c as _mod

        return _mod.crc32c  # (data, value=0)
    except ImportError:
        pass
    try:
        import crcmod.predefined

        fun = crcmod.predefined.mkCrcFun("crc-32c")
        return lambda data, value=0: fun(bytes(data) if isinstance(data, memoryview) else data, value)
    except ImportError:
        pass

    def missing(data: Buffer, value: int = 0) -> int:
        raise CodecUnavailableError("CRC-32C needs the 'crc32c' package: pip install crc32c")

    return missing


crc32c: Callable[..., int] = _load_crc32c()
"""CRC-32C of a bytes-like object, as an unsigned 32-bit int; ``crc32c(more, crc32c(data))`` continues it."""


def crc32(data: Buffer) -> int:
    """CRC-32 (IEEE, zlib's) of a bytes-like object, as an unsigned 32-bit int."""
    return zlib.crc32(data)

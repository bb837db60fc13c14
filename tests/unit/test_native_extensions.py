"""The checksum libraries run native code: a pure-Python CRC would cost more than decoding itself."""

from __future__ import annotations

import importlib
import zlib


def test_crcmod_c_extension_is_built():
    # crcmod silently falls back to pure Python when its C extension failed to build at install time.
    ext = importlib.import_module("crcmod._crcfunext")
    assert ext.__file__.endswith((".so", ".pyd"))


def test_crc32c_is_the_fast_package_and_agrees_with_crcmod():
    import crc32c
    import crcmod.predefined

    from kafka_spark.records.crc import crc32c as ours

    data = bytes(range(256)) * 64
    assert ours is crc32c.crc32c
    assert ours(data) == crcmod.predefined.mkCrcFun("crc-32c")(data)
    assert ours(memoryview(data)) == ours(data) != zlib.crc32(data)

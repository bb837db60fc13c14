"""Compression codecs for record batches: bounded decompression into an `Arena`, and compression.

Decompression never trusts a size field: each codec's output is bounded up front (snappy and
xerial state their sizes and are checked, zstd block headers bound its output, the LZ4 and gzip
decoders stop at a cap), and anything beyond the caller's limit is a `DecodeError`.
"""

from __future__ import annotations

import threading
import zlib
from types import ModuleType
from typing import Any

from kafka_spark.errors import CodecUnavailableError, DecodeError, UnsupportedFormatError
from kafka_spark.protocol.varint import decode_uvarint
from kafka_spark.records import lz4frame, zstdframe
from kafka_spark.records.arena import Arena
from kafka_spark.records.constants import MAGIC_V0, Compression

Buffer = bytes | bytearray | memoryview

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
XERIAL_BLOCK_SIZE = 32 * 1024

DEFAULT_MAX_DECOMPRESSED = 512 << 20
"""Default cap on the bytes one decode call may decompress (all batches together)."""


def _optional(name: str) -> ModuleType | None:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


_cramjam = _optional("cramjam")
_lz4frame = _optional("lz4.frame")
_zstandard = _optional("zstandard")
_snappy = _optional("snappy")


def _unavailable(codec: str, package: str) -> CodecUnavailableError:
    return CodecUnavailableError(f"{codec} compression needs the '{package}' package: pip install {package}")


# -- decompression ---------------------------------------------------------------------------------


def decompress_into(codec: int, data: Buffer, arena: Arena, limit: int, *, magic: int = 2) -> tuple[int, int]:
    """Decompress `data` to the end of `arena`; return (start, length). At most `limit` bytes."""
    if codec == Compression.GZIP:
        return _gzip_into(data, arena, limit)
    if codec == Compression.SNAPPY:
        return _snappy_into(data, arena, limit)
    if codec == Compression.LZ4:
        return _lz4_into(data, arena, limit, magic)
    if codec == Compression.ZSTD:
        return _zstd_into(data, arena, limit)
    if codec == Compression.NONE:
        if len(data) > limit:
            raise DecodeError(f"{len(data)} bytes exceed the limit of {limit}")
        return arena.append(data), len(data)
    raise UnsupportedFormatError(f"unknown compression codec id {codec}")


def decompress_batches(
    codecs: list[int], data: memoryview, starts: list[int], ends: list[int], arena: Arena, limit: int
) -> tuple[list[int], list[int]]:
    """Decompress `data[starts[i]:ends[i]]` (magic v2) one after another into `arena`.

    Returns the start and end of each output in the arena; `limit` caps the total output.
    """
    out_start: list[int] = []
    out_end: list[int] = []
    base = arena.size
    for codec, a, b in zip(codecs, starts, ends, strict=True):
        at, n = decompress_into(codec, data[a:b], arena, limit - (arena.size - base))
        out_start.append(at)
        out_end.append(at + n)
    return out_start, out_end


def decompress(codec: int, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress `data` into a new bytes object (at most `limit` bytes)."""
    arena = Arena(capacity=min(max(4 * len(data), 1024), limit))
    start, length = decompress_into(codec, data, arena, limit, magic=magic)
    return arena.used()[start : start + length].tobytes()


def _too_big(codec: str, limit: int) -> DecodeError:
    return DecodeError(f"{codec}: decompressed data would exceed the limit of {limit} bytes")


def _gzip_into(data: Buffer, arena: Arena, limit: int) -> tuple[int, int]:
    # zlib beats the alternatives on batch-sized inputs (tens of microseconds are per-call setup).
    start = arena.size
    total = 0
    rest: Buffer = data
    try:
        while True:
            inflater = zlib.decompressobj(31)
            chunk = inflater.decompress(rest, limit - total + 1)
            total += len(chunk)
            if total > limit:
                arena.size = start
                raise _too_big("gzip", limit)
            arena.append(chunk)
            if not inflater.eof:
                raise DecodeError("gzip: stream is truncated")
            rest = inflater.unused_data
            # Like Java's GZIPInputStream: further members are read, other trailing bytes ignored.
            if rest[:2] != b"\x1f\x8b":
                return start, total
    except zlib.error as exc:
        arena.size = start
        raise DecodeError(f"gzip: {exc}") from None


def _snappy_into(data: Buffer, arena: Arena, limit: int) -> tuple[int, int]:
    if bytes(data[:8]) != XERIAL_MAGIC:
        return _snappy_raw_into(data, arena, limit)
    if len(data) < 16:
        raise DecodeError("snappy: truncated xerial header")
    start = arena.size
    pos = 16
    n = len(data)
    try:
        while pos < n:
            if pos + 4 > n:
                raise DecodeError("snappy: truncated xerial block header")
            size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
            if size < 0 or pos + 4 + size > n:
                raise DecodeError("snappy: truncated or invalid xerial block")
            _snappy_raw_into(memoryview(data)[pos + 4 : pos + 4 + size], arena, limit - (arena.size - start))
            pos += 4 + size
    except DecodeError:
        arena.size = start
        raise
    return start, arena.size - start


# The densest snappy element is a 3-byte copy of 64 bytes.
_SNAPPY_MAX_RATIO = 22


def _check_snappy_size(size: int, compressed: int, limit: int) -> None:
    if size > limit:
        raise _too_big("snappy", limit)
    if size > _SNAPPY_MAX_RATIO * compressed + 64:
        # A stated size no input of this length can produce: refuse it before reserving room for it.
        raise DecodeError(f"snappy: stated size {size} is more than {compressed} compressed bytes can hold")


def _snappy_raw_into(data: Buffer, arena: Arena, limit: int) -> tuple[int, int]:
    if _cramjam is None:
        out = _snappy_raw_fallback(data, limit)
        return arena.append(out), len(out)
    try:
        size = _cramjam.snappy.decompress_raw_len(data)
    except _cramjam.DecompressionError as exc:
        raise DecodeError(f"snappy: {exc}") from None
    _check_snappy_size(size, len(data), limit)
    view = arena.reserve(size)
    try:
        n = _cramjam.snappy.decompress_raw_into(data, view)
    except _cramjam.DecompressionError as exc:
        raise DecodeError(f"snappy: {exc}") from None
    finally:
        del view
    if n != size:
        raise DecodeError("snappy: decompressed size differs from the stated size")
    return arena.commit(n), n


def _snappy_raw_fallback(data: Buffer, limit: int) -> bytes:
    if _snappy is None:
        raise _unavailable("snappy", "cramjam")
    size, _ = decode_uvarint(data, 0, 5)
    _check_snappy_size(size, len(data), limit)
    try:
        return _snappy.decompress(bytes(data))
    except Exception as exc:
        raise DecodeError(f"snappy: {exc}") from None


def _lz4_into(data: Buffer, arena: Arena, limit: int, magic: int) -> tuple[int, int]:
    frame: Buffer = data
    if magic == MAGIC_V0:
        # Java ignores the header checksum of magic-v0 frames (KAFKA-3160); libraries verify it.
        frame = lz4frame.with_header_checksum(frame, broken=False)
    if _lz4frame is not None:
        # liblz4 (python-lz4) is several times faster per batch than the alternatives. Its
        # max_length bounds the output whatever the frame claims, but is allocated up front: keep
        # it to LZ4's worst case (255-fold expansion) when that is below the limit.
        room = min(limit, 256 * len(frame) + (64 << 10))
        inflater = _lz4frame.LZ4FrameDecompressor()
        try:
            out = inflater.decompress(frame, max_length=room)
        except RuntimeError as exc:
            raise DecodeError(f"lz4: {exc}") from None
        if not inflater.eof:
            if not inflater.needs_input:
                raise _too_big("lz4", limit)
            raise DecodeError("lz4: frame is truncated")
        # Bytes after the frame's end mark are ignored, as Java's reader ignores them.
        return arena.append(out), len(out)
    if _cramjam is None:
        raise _unavailable("lz4", "lz4")
    bound, length = lz4frame.frame_bound(frame)
    size = min(bound, limit)
    view = arena.reserve(size)
    try:
        n = _cramjam.lz4.decompress_into(memoryview(frame)[:length], view)
    except _cramjam.DecompressionError as exc:
        if bound > limit:
            raise _too_big("lz4", limit) from None
        raise DecodeError(f"lz4: {exc}") from None
    finally:
        del view
    return arena.commit(n), n


def _zstd_into(data: Buffer, arena: Arena, limit: int) -> tuple[int, int]:
    # The frame walk bounds the output and rejects truncated frames (a stream reader would
    # report those as a clean end); a reused decompression context then costs ~2 us per batch,
    # against ~10 us for one-shot APIs that set up a context per call.
    bound = zstdframe.frames_bound(data)
    size = min(bound, limit)
    if _zstandard is None:
        return _zstd_cramjam(data, arena, size, bound > limit, limit)
    view = arena.reserve(size)
    reader = _zstd_context(_zstandard).stream_reader(data, read_across_frames=True)
    try:
        # The reader fills the view unless the input runs out first: one call does it all.
        total = reader.readinto(view)
        if total == size and bound > limit and reader.read(1):
            raise _too_big("zstd", limit)
    except _zstandard.ZstdError as exc:
        raise DecodeError(f"zstd: {exc}") from None
    finally:
        del view
        reader.close()
    return arena.commit(total), total


def _zstd_cramjam(data: Buffer, arena: Arena, size: int, maybe_more: bool, limit: int) -> tuple[int, int]:
    if _cramjam is None:
        raise _unavailable("zstd", "zstandard")
    view = arena.reserve(size)
    try:
        n = _cramjam.zstd.decompress_into(data, view)
    except _cramjam.DecompressionError as exc:
        if maybe_more:
            raise _too_big("zstd", limit) from None
        raise DecodeError(f"zstd: {exc}") from None
    finally:
        del view
    return arena.commit(n), n


_contexts = threading.local()


def _zstd_context(zstandard: ModuleType) -> Any:
    ctx = getattr(_contexts, "zstd", None)
    if ctx is None:
        ctx = _contexts.zstd = zstandard.ZstdDecompressor()
    return ctx


# -- compression -----------------------------------------------------------------------------------


def compress(codec: int, data: Buffer, *, magic: int = 2, xerial: bool = True, level: int | None = None) -> bytes:
    """Compress `data` the way Kafka's Java producer does for `codec` (and `magic`, for LZ4)."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        deflater = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return deflater.compress(data) + deflater.flush()
    if codec == Compression.SNAPPY:
        return _snappy_compress(data, xerial)
    if codec == Compression.LZ4:
        return _lz4_compress(data, magic, level)
    if codec == Compression.ZSTD:
        return _zstd_compress(data, level)
    raise UnsupportedFormatError(f"unknown compression codec id {codec}")


def _snappy_raw(data: Buffer) -> bytes:
    if _cramjam is not None:
        return bytes(_cramjam.snappy.compress_raw(bytes(data)))
    if _snappy is not None:
        return _snappy.compress(bytes(data))
    raise _unavailable("snappy", "cramjam")


def _snappy_compress(data: Buffer, xerial: bool) -> bytes:
    if not xerial:
        return _snappy_raw(data)
    # snappy-java's SnappyOutputStream framing: header, then [int32 length, raw block] per 32 KiB.
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for i in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = _snappy_raw(view[i : i + XERIAL_BLOCK_SIZE])
        parts.append(len(block).to_bytes(4, "big"))
        parts.append(block)
    return b"".join(parts)


def _lz4_compress(data: Buffer, magic: int, level: int | None) -> bytes:
    if _lz4frame is None:
        raise _unavailable("lz4", "lz4")
    # Java's reader decodes each block on its own: independent 64 KiB blocks, no content size.
    frame = _lz4frame.compress(
        bytes(data),
        compression_level=0 if level is None else level,
        block_size=_lz4frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if magic == MAGIC_V0:
        return bytes(lz4frame.with_header_checksum(frame, broken=True))
    return frame


def _zstd_compress(data: Buffer, level: int | None) -> bytes:
    if _zstandard is not None:
        # Like Java's zstd-jni stream: no content size in the frame header.
        return _zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False).compress(
            bytes(data)
        )
    if _cramjam is not None:
        return bytes(_cramjam.zstd.compress(bytes(data), level=3 if level is None else level))
    raise _unavailable("zstd", "zstandard")

"""Walk zstd frame and block headers to bound the decompressed size before decompressing.

Java producers write frames without a content size, so the size is not known up front; the block
headers give an upper bound (raw and RLE blocks state their size, a compressed block regenerates at
most 128 KiB), and walking them detects a truncated frame, which some decoders report as a clean end.
"""

from __future__ import annotations

from kafka_spark.errors import DecodeError

_FRAME_MAGIC = 0xFD2FB528
_BLOCK_MAX = 128 << 10
_FCS_BYTES = (0, 2, 4, 8)
_DICT_BYTES = (0, 1, 2, 4)


def _skippable(magic: int) -> bool:
    return magic & 0xFFFFFFF0 == 0x184D2A50


def frames_bound(data: bytes | bytearray | memoryview) -> int:
    """Upper bound of the decompressed size of consecutive zstd frames filling `data` exactly."""
    n = len(data)
    pos = 0
    total = 0
    if n == 0:
        raise DecodeError("zstd: empty input")
    while pos < n:
        if pos + 4 > n:
            raise DecodeError("zstd: truncated frame header")
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if _skippable(magic):
            if pos + 8 > n:
                raise DecodeError("zstd: truncated skippable frame")
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            continue
        if magic != _FRAME_MAGIC:
            raise DecodeError("zstd: unknown frame magic")
        pos, bound = _frame(data, pos + 4, n)
        total += bound
    if pos != n:
        raise DecodeError("zstd: truncated frame")
    return total


def _frame(data: bytes | bytearray | memoryview, pos: int, n: int) -> tuple[int, int]:
    if pos >= n:
        raise DecodeError("zstd: truncated frame header")
    fhd = data[pos]
    pos += 1
    single_segment = fhd & 0x20
    if fhd & 0x08:
        raise DecodeError("zstd: reserved bit set in the frame header")
    fcs_flag = fhd >> 6
    fcs_bytes = 1 if (fcs_flag == 0 and single_segment) else _FCS_BYTES[fcs_flag]
    pos += (0 if single_segment else 1) + _DICT_BYTES[fhd & 0x03]
    if pos + fcs_bytes > n:
        raise DecodeError("zstd: truncated frame header")
    content_size = -1
    if fcs_bytes:
        content_size = int.from_bytes(data[pos : pos + fcs_bytes], "little")
        if fcs_bytes == 2:
            content_size += 256
    pos += fcs_bytes
    bound = 0
    while True:
        if pos + 3 > n:
            raise DecodeError("zstd: truncated block header")
        header = int.from_bytes(data[pos : pos + 3], "little")
        pos += 3
        kind = (header >> 1) & 0x03
        size = header >> 3
        if kind == 0:
            bound += size
            pos += size
        elif kind == 1:
            bound += size
            pos += 1
        elif kind == 2:
            if size > _BLOCK_MAX:
                raise DecodeError("zstd: compressed block larger than 128 KiB")
            bound += _BLOCK_MAX
            pos += size
        else:
            raise DecodeError("zstd: reserved block type")
        if pos > n:
            raise DecodeError("zstd: truncated block")
        if header & 1:
            break
    if fhd & 0x04:
        pos += 4
    if pos > n:
        raise DecodeError("zstd: truncated frame checksum")
    if 0 <= content_size < bound:
        bound = content_size
    return pos, bound

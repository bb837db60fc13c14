"""Codecs as Kafka writes them: xerial snappy, LZ4 frames (and KAFKA-3160), zstd without sizes, gzip."""

from __future__ import annotations

import gzip
import os
import struct

import kafka.codec
import lz4.frame
import pytest
import zstandard

from kafka_spark.errors import DecodeError
from kafka_spark.records import Compression, encode_batch, iter_records
from kafka_spark.records.compression import XERIAL_HEADER, compress, decompress
from kafka_spark.records.constants import compression_of
from kafka_spark.records.lz4frame import header_checksum, with_header_checksum, xxh32

DATA = os.urandom(5000) + b"kafka " * 20000


def test_xxh32_published_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    assert xxh32(b"abc", seed=1) != xxh32(b"abc")


def test_codec_names() -> None:
    assert compression_of("ZSTD") == Compression.ZSTD
    assert compression_of(None) == compression_of("none") == Compression.NONE
    assert compression_of(2) == Compression.SNAPPY
    with pytest.raises(ValueError, match="unknown compression"):
        compression_of("brotli")


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("data", [b"", b"x", DATA])
def test_round_trip(codec: int, data: bytes) -> None:
    for magic in (0, 1, 2):
        assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


def test_xerial_framing_matches_kafka_python() -> None:
    ours = compress(Compression.SNAPPY, DATA)
    assert ours[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) == XERIAL_HEADER
    first_block = struct.unpack(">i", ours[16:20])[0]
    assert kafka.codec.snappy_decode(ours[:20 + first_block]) == DATA[:32 * 1024]
    assert kafka.codec.snappy_decode(ours) == DATA
    assert decompress(Compression.SNAPPY, kafka.codec.snappy_encode(DATA)) == DATA
    raw = kafka.codec.snappy_encode(DATA, xerial_compatible=False)
    assert decompress(Compression.SNAPPY, raw) == DATA
    assert compress(Compression.SNAPPY, DATA, xerial=False)[:8] != XERIAL_HEADER[:8]


def test_lz4_v0_uses_the_kafka_3160_header_checksum() -> None:
    old = compress(Compression.LZ4, DATA, magic=0)
    new = compress(Compression.LZ4, DATA, magic=1)
    hc_at = 6  # magic(4) FLG BD, no content size
    assert old[hc_at] == header_checksum(old, broken=True) != header_checksum(old)
    assert new[hc_at] == header_checksum(new)
    assert old[:hc_at] == new[:hc_at] and old[hc_at + 1 :] == new[hc_at + 1 :]
    # Magic v0 readers accept either checksum; newer magics insist on the correct one.
    assert decompress(Compression.LZ4, old, magic=0) == DATA
    assert decompress(Compression.LZ4, new, magic=0) == DATA
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, old, magic=1)
    assert with_header_checksum(new, broken=False) is new


def test_lz4_frame_variants() -> None:
    variants = [
        dict(store_size=True),
        dict(content_checksum=True),
        dict(block_linked=True),
        dict(block_size=lz4.frame.BLOCKSIZE_MAX4MB),
        dict(block_checksum=True),
        dict(compression_level=9),
    ]
    for flags in variants:
        frame = lz4.frame.compress(DATA, **flags)
        assert decompress(Compression.LZ4, frame) == DATA, flags
    frame = lz4.frame.compress(DATA)
    # Bytes after the frame's end mark are ignored, as Java's reader ignores them.
    assert decompress(Compression.LZ4, frame + b"trailing") == DATA
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, frame[:-7])


def test_zstd_without_content_size_and_many_frames() -> None:
    java_like = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(java_like)  # why a one-shot API is not enough
    assert decompress(Compression.ZSTD, java_like) == DATA
    two = java_like + zstandard.ZstdCompressor().compress(b"second frame")
    assert decompress(Compression.ZSTD, two) == DATA + b"second frame"
    skippable = struct.pack("<II", 0x184D2A50, 4) + b"skip"
    assert decompress(Compression.ZSTD, skippable + java_like) == DATA
    for cut in (1, 5, len(java_like) // 2, len(java_like) - 1):
        with pytest.raises(DecodeError):
            decompress(Compression.ZSTD, java_like[:cut])
    with pytest.raises(DecodeError):
        decompress(Compression.ZSTD, java_like + b"garbage!")


def test_gzip_members_and_trailing_bytes() -> None:
    members = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress(Compression.GZIP, members) == b"one two"
    assert decompress(Compression.GZIP, gzip.compress(b"x") + b"\x00\x00junk") == b"x"
    with pytest.raises(DecodeError):
        decompress(Compression.GZIP, gzip.compress(DATA)[:-12])
    with pytest.raises(DecodeError):
        decompress(Compression.GZIP, b"\x1f\x8b not gzip at all")


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_limits(codec: int) -> None:
    blob = compress(codec, bytes(5_000_000))
    with pytest.raises(DecodeError, match="limit"):
        decompress(codec, blob, limit=4_999_999)
    assert len(decompress(codec, blob, limit=5_000_000)) == 5_000_000


def test_java_style_compressed_batches_decode() -> None:
    # A batch whose zstd frame has no content size, as the Java producer writes it.
    buf = encode_batch([(None, b"payload %d" % i, (), 1) for i in range(100)], compression="zstd")
    assert zstandard.get_frame_parameters(buf[61:]).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert [r.value for r in iter_records(buf)] == [b"payload %d" % i for i in range(100)]


def test_snappy_stated_size_beyond_what_the_input_can_hold() -> None:
    # The densest snappy input (runs of one byte) expands about 21-fold; a block claiming more is
    # refused before room for it is reserved, both raw and inside xerial framing.
    dense = compress(Compression.SNAPPY, bytes(1_000_000), magic=2)
    assert len(decompress(Compression.SNAPPY, dense)) == 1_000_000
    raw = b"\xff\xff\xff\x7f" + b"\x00" * 40  # varint 268435455, then 40 bytes
    with pytest.raises(DecodeError, match="stated size 268435455 is more than 44 compressed bytes can hold"):
        decompress(Compression.SNAPPY, raw, limit=1 << 30)
    framed = XERIAL_HEADER + struct.pack(">i", len(raw)) + raw
    with pytest.raises(DecodeError, match="stated size"):
        decompress(Compression.SNAPPY, framed, limit=1 << 30)

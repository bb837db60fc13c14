"""Partial tails, corruption, limits and unsupported input."""

from __future__ import annotations

import struct

import pytest
from records_support import arrow_rows, record_rows

from kafka_spark.errors import CodecUnavailableError, CorruptRecordError, DecodeError, UnsupportedFormatError
from kafka_spark.records import compression, decode_to_arrow, encode_batch, iter_records, scan_batches
from kafka_spark.records.crc import crc32c
from kafka_spark.records.encoder import encode_message

TS = 1_700_000_000_000


def batches(magic: int = 2, codec: str = "none", n: int = 4) -> list[bytes]:
    return [
        encode_batch([(b"k%d" % i, b"v" * (i + b), (), TS + i) for i in range(1 + b)], magic=magic,
                     compression=codec, base_offset=100 * b)
        for b in range(n)
    ]


@pytest.mark.parametrize(("magic", "codec"), [(2, "none"), (2, "gzip"), (1, "none"), (1, "snappy"), (0, "lz4")])
def test_partial_tail_at_every_cut(magic: int, codec: str) -> None:
    buf = b"".join(batches(magic, codec))
    complete = [0] + [b.position + b.size for b in scan_batches(buf).batches]
    assert len(complete) > 4
    for cut in range(len(buf) + 1):
        head = buf[:cut]
        whole = max(b for b in complete if b <= cut)
        result = decode_to_arrow(head, "t", 0)
        assert result.end == whole
        assert result.incomplete_at == (None if whole == cut else whole)
        assert arrow_rows(result.batch) == record_rows(iter_records(buf[:whole]), headers=False)
        scan = scan_batches(head)
        assert (scan.end, scan.incomplete_at) == (result.end, result.incomplete_at)
        if whole == 0:
            assert result.next_offset is None


@pytest.mark.parametrize(("magic", "codec"), [(2, "none"), (2, "zstd"), (1, "none"), (1, "gzip"), (0, "none")])
def test_crc_mismatch_names_the_offset(magic: int, codec: str) -> None:
    parts = batches(magic, codec)
    bad = bytearray(parts[2])
    bad[-2] ^= 0x01  # inside the last value (v2 ends with the header count)
    buf = b"".join([parts[0], parts[1], bytes(bad), parts[3]])
    want = struct.unpack_from(">q", bad)[0] if magic == 2 or codec != "none" else None
    with pytest.raises(CorruptRecordError, match="CRC") as err:
        decode_to_arrow(buf, "t", 0)
    assert err.value.offset == (want if want is not None else 200 + 2)
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(iter_records(buf))
    if codec == "none":
        # Without verification the flipped bit is simply part of a value.
        rows = arrow_rows(decode_to_arrow(buf, "t", 0, verify_crc=False).batch)
        assert rows == record_rows(iter_records(buf, verify_crc=False), headers=False)


def test_inner_message_crc_is_checked() -> None:
    inner = bytearray(encode_message(1, 0, 0, TS, b"k", b"v") + encode_message(1, 1, 0, TS, b"k", b"w"))
    inner[-1] ^= 0xFF
    wrapper = encode_message(1, 41, 1, TS, None, compression.compress(1, bytes(inner)))
    with pytest.raises(CorruptRecordError, match="CRC") as err:
        decode_to_arrow(wrapper, "t", 0)
    assert err.value.offset == 41
    assert len(decode_to_arrow(wrapper, "t", 0, verify_crc=False).batch) == 2


def rewrite_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


@pytest.mark.parametrize("where", range(61, 80))
def test_malformed_records_with_valid_crc(where: int) -> None:
    # Structural damage behind a correct CRC: both readers fail with the same error, never crash.
    good = encode_batch([(b"key", b"value" * 3, [("h", b"x")], TS), (None, b"v2", (), TS)], base_offset=5)
    bad = bytearray(good)
    bad[where] = (bad[where] + 0x41) & 0xFF
    buf = rewrite_crc(bad)
    try:
        want = record_rows(iter_records(buf))
    except CorruptRecordError as exc:
        assert exc.offset == 5
        with pytest.raises(CorruptRecordError) as err:
            decode_to_arrow(buf, "t", 0, include_headers=True)
        assert str(err.value) == str(exc)
    else:
        assert arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True).batch) == want


def test_offset_range_filter() -> None:
    buf = b"".join(batches(2, "lz4", n=5))  # offsets 0, 100-101, 200-202, 300-303, 400-404
    result = decode_to_arrow(buf, "t", 0, start_offset=101, end_offset=302)
    assert [r[0] for r in arrow_rows(result.batch)] == [101, 200, 201, 202, 300, 301]
    assert result.skipped_out_of_range == 1 + 1 + 2 + 5
    assert result.next_offset == 405
    assert [r.offset for r in iter_records(buf, start_offset=101, end_offset=302)] == [101, 200, 201, 202, 300, 301]
    legacy = b"".join(batches(1, "gzip", n=3))
    assert [r[0] for r in arrow_rows(decode_to_arrow(legacy, "t", 0, start_offset=1, end_offset=201).batch)] == [
        100, 101, 200]


def test_size_fields() -> None:
    good = batches()[0]
    tiny = bytearray(good)
    struct.pack_into(">i", tiny, 8, 3)
    with pytest.raises(CorruptRecordError, match="size"):
        decode_to_arrow(bytes(tiny), "t", 0)
    short_v2 = bytearray(good[:40])
    struct.pack_into(">i", short_v2, 8, 28)
    with pytest.raises(CorruptRecordError, match="smaller than the 61-byte"):
        decode_to_arrow(bytes(short_v2), "t", 0)
    with pytest.raises(CorruptRecordError):
        decode_to_arrow(good, "t", 0, max_batch_size=len(good) - 13)
    assert decode_to_arrow(good, "t", 0, max_batch_size=len(good) - 12).batch.num_rows == 1
    huge = bytearray(good)
    struct.pack_into(">i", huge, 8, 2**31 - 1)
    assert decode_to_arrow(bytes(huge), "t", 0).incomplete_at == 0  # as Kafka reads it: not there yet


def test_unknown_magic_and_codec() -> None:
    bad = bytearray(batches()[0])
    bad[16] = 3
    with pytest.raises(UnsupportedFormatError, match="magic"):
        decode_to_arrow(bytes(bad), "t", 0)
    bad = bytearray(batches()[0])
    bad[22] = 5  # compression id 5 in the attributes' low byte
    with pytest.raises(UnsupportedFormatError, match="compression"):
        decode_to_arrow(rewrite_crc(bad), "t", 0)


def test_record_count_bounds() -> None:
    bad = bytearray(batches()[1])
    struct.pack_into(">i", bad, 57, 10**9)
    with pytest.raises(CorruptRecordError, match="claims"):
        decode_to_arrow(rewrite_crc(bad), "t", 0)
    struct.pack_into(">i", bad, 57, -1)
    with pytest.raises(CorruptRecordError, match="record count"):
        decode_to_arrow(rewrite_crc(bad), "t", 0)
    struct.pack_into(">i", bad, 57, 1)  # fewer records than the bytes hold
    with pytest.raises(CorruptRecordError, match="remain"):
        decode_to_arrow(rewrite_crc(bad), "t", 0)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_is_bounded(codec: str) -> None:
    buf = encode_batch([(None, bytes(2_000_000), (), TS)], compression=codec)
    assert len(buf) < 200_000
    with pytest.raises(DecodeError, match="limit"):
        decode_to_arrow(buf, "t", 0, max_decompressed_bytes=1_000_000)
    with pytest.raises(DecodeError, match="limit"):
        list(iter_records(buf, max_decompressed_bytes=1_000_000))
    assert decode_to_arrow(buf, "t", 0, max_decompressed_bytes=3_000_000).batch.num_rows == 1


def test_missing_codec_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_cramjam", None)
    monkeypatch.setattr(compression, "_lz4frame", None)
    monkeypatch.setattr(compression, "_snappy", None)
    with pytest.raises(CodecUnavailableError, match="pip install lz4"):
        encode_batch([(None, b"x", (), TS)], compression="lz4")
    with pytest.raises(CodecUnavailableError, match="pip install cramjam"):
        encode_batch([(None, b"x", (), TS)], compression="snappy")
    monkeypatch.undo()
    buf = encode_batch([(None, b"x", (), TS)], compression="snappy")
    monkeypatch.setattr(compression, "_cramjam", None)
    monkeypatch.setattr(compression, "_snappy", None)
    with pytest.raises(CodecUnavailableError, match="snappy"):
        decode_to_arrow(buf, "t", 0)


def test_bytes_after_the_last_record() -> None:
    bad = bytearray(encode_batch([(None, b"x", (), TS)], base_offset=3))
    struct.pack_into(">i", bad, 57, 0)
    with pytest.raises(CorruptRecordError, match="remain after its 0 records"):
        decode_to_arrow(rewrite_crc(bad), "t", 0)

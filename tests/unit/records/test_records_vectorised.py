"""The vectorised path's own machinery: byte-range gathering, arena reuse, nesting, threads."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest
from records_support import arrow_rows, record_rows

from kafka_spark.records import Decoder, decode_to_arrow, encode_batch, iter_records
from kafka_spark.records import arrow as arrow_mod
from kafka_spark.records.compression import compress
from kafka_spark.records.encoder import encode_message

TS = 1_700_000_000_000


def test_slices_in_and_out_of_order() -> None:
    source = pa.py_buffer(b"0123456789abcdef")
    pos = np.array([10, 0, 4, 4, 15])
    length = np.array([3, 2, -1, 0, 1])
    got = arrow_mod.slices(source, pos, length, pa.binary())
    assert got.to_pylist() == [b"abc", b"01", None, b"", b"f"]
    assert arrow_mod.slices(source, pos[:0], length[:0], pa.binary()).to_pylist() == []
    assert arrow_mod.slices(source, pos[:1], np.array([-1]), pa.binary()).to_pylist() == [None]
    # out of order, an empty item (or a null) where another starts
    got = arrow_mod.slices(source, np.array([10, 4, 4, 0]), np.array([2, 3, -1, 0]), pa.binary())
    assert got.to_pylist() == [b"ab", b"456", None, b""]
    got = arrow_mod.slices(source, np.array([10, 4, 4]), np.array([2, 3, 0]), pa.binary())
    assert got.to_pylist() == [b"ab", b"456", b""]
    with pytest.raises(ValueError):
        arrow_mod.slices(source, np.array([0, 1]), np.array([5, 1]), pa.binary())  # overlapping
    with pytest.raises(ValueError):
        arrow_mod.slices(source, np.array([14]), np.array([5]), pa.binary())  # past the end


def test_wide_sources_use_64_bit_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_mod, "_INT32_LIMIT", 100)
    buf = encode_batch([(b"k%d" % i, b"v" * 50, [("h", b"x")], TS) for i in range(20)])
    batch = decode_to_arrow(buf, "t", 0, include_headers=True).batch
    assert batch.schema.field("value").type == pa.binary()
    assert arrow_rows(batch) == record_rows(iter_records(buf))


def test_nested_wrappers() -> None:
    # Kafka never nests compressed messages, but the format allows it; offsets chain through.
    nested = encode_message(1, 1, 2, TS, None, compress(2, encode_message(1, 0, 0, TS, b"n0", b"x")
                                                       + encode_message(1, 1, 0, TS, b"n1", b"y")))
    inner = encode_message(1, 0, 0, TS, b"m0", b"a") + nested + encode_message(1, 2, 0, TS, b"m2", b"b")
    outer = encode_message(1, 10, 1, TS, None, compress(1, inner))
    scalar = record_rows(iter_records(outer), headers=False)
    assert [(r[0], r[3]) for r in scalar] == [(8, b"m0"), (8, b"n0"), (9, b"n1"), (10, b"m2")]
    assert arrow_rows(decode_to_arrow(outer, "t", 0).batch) == scalar


def test_outputs_do_not_alias_the_arena() -> None:
    decoder = Decoder()
    first = encode_batch([(b"k", b"first" * 10, (), TS)] * 50, compression="lz4")
    kept = decoder.decode(first, "t", 0).batch
    snapshot = kept.to_pylist()
    for codec in ("zstd", "gzip", "snappy", "none"):
        other = encode_batch([(b"x", b"other" * 99, (), TS)] * 80, compression=codec)
        decoder.decode(other, "t", 0)
    assert kept.to_pylist() == snapshot


def test_arena_shrinks_after_a_huge_decode() -> None:
    decoder = Decoder()
    decoder.arena.max_retained = 1 << 20
    buf = encode_batch([(None, bytes(3_000_000), (), TS)], compression="zstd")
    assert decoder.decode(buf, "t", 0).batch.num_rows == 1
    assert decoder.arena.capacity <= 1 << 20


def test_threads_get_their_own_decoder() -> None:
    bufs = [encode_batch([(b"%d" % t, b"v%d" % i, (), TS) for i in range(500)], compression="lz4") for t in range(4)]
    results: dict[int, list] = {}

    def work(t: int) -> None:
        results[t] = [decode_to_arrow(bufs[t], "t", t).batch.column("key").to_pylist() for _ in range(20)]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in range(4):
        assert all(keys == [b"%d" % t] * 500 for keys in results[t])


def test_view_slices_are_the_same_items_without_a_copy() -> None:
    rng = np.random.default_rng(7)
    for trial in range(200):
        n = int(rng.integers(1, 50))
        length = rng.integers(-1, 40, n)  # nulls, empty, inline (<= 12 bytes) and referenced items
        pos = np.concatenate([[0], np.cumsum(np.maximum(length, 0) + rng.integers(1, 4, n))[:-1]])
        if trial % 3 == 0:
            pos, length = pos[::-1].copy(), length[::-1].copy()  # out of buffer order
        data = rng.integers(0, 256, int((pos + np.maximum(length, 0)).max()), dtype=np.uint8).tobytes()
        source = pa.py_buffer(data)
        views = arrow_mod.view_slices(source, pos, length)
        views.validate(full=True)
        assert views.type == pa.binary_view()
        assert views.to_pylist() == arrow_mod.slices(source, pos, length, pa.binary()).to_pylist()
        if (length > 12).any():
            start = source.address
            assert start <= views.buffers()[2].address < start + source.size  # the source itself, not a copy
    with pytest.raises(ValueError):
        arrow_mod.view_slices(pa.py_buffer(b"0123"), np.array([2]), np.array([5]))  # past the end
    assert arrow_mod.view_slices(pa.py_buffer(b""), np.array([0]), np.array([-1])).to_pylist() == [None]


@pytest.mark.parametrize("codec", ["none", "zstd", "legacy"])
def test_views_decode_the_same_records_and_only_uncompressed_ones_reference_the_input(codec: str) -> None:
    records = [(None if i % 5 == 0 else b"k%d" % i, None if i % 7 == 0 else bytes([i % 251]) * (i % 40),
                [("h", b"x" * i)] if i % 2 else [], TS + i) for i in range(120)]
    if codec == "legacy":
        buf = b"".join(encode_message(1, i, 0, TS + i, k, v) for i, (k, v, _, _) in enumerate(records))
    else:
        buf = encode_batch(records, compression=None if codec == "none" else codec)
    copied = decode_to_arrow(buf, "t", 0, include_headers=True, start_offset=3, end_offset=110).batch
    viewed = decode_to_arrow(buf, "t", 0, include_headers=True, start_offset=3, end_offset=110, views=True).batch
    compressed = codec == "zstd"
    kind = pa.binary() if compressed else pa.binary_view()
    assert viewed.schema.field("key").type == kind and viewed.schema.field("value").type == kind
    assert viewed.cast(copied.schema).equals(copied)
    assert copied.num_rows == 107
    values = viewed.column("value")
    if not compressed:
        data = values.buffers()[2]
        start = pa.py_buffer(buf).address
        assert start <= data.address < start + len(buf)

"""`records.column_encoder` writes byte for byte what `encode_produced_records` writes for the same records: null and
empty keys and values, lengths at every varint step, timestamp and offset deltas past two-byte varints, sliced,
large and string columns, columns in pieces, rows picked from pieces, every codec, by each layout (binary views,
one take, or an element-wise join); a batch laid out in runs (each with its own offset and timestamp deltas,
as a producer lays out a batch's records call by call) and framed; and a batch sealed in place."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pyarrow as pa
import pytest

from kafka_spark.records import column_encoder, encode_produced_records, seal_produced
from kafka_spark.records.column_encoder import binary_lengths, encode_columns, frame_records, lay_out_records

BASE = 1_700_000_000_000


@pytest.fixture(autouse=True, params=["views", "take", "join"])
def layout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test with records laid out by each of the three ways, whatever their size: binary views (pyarrow 18
    or newer), one take, or an element-wise join."""
    if request.param == "views" and not column_encoder._views_supported():
        pytest.skip("binary views need pyarrow 18 or newer")
    monkeypatch.setattr(column_encoder, "_VIEWS", request.param == "views")
    monkeypatch.setattr(column_encoder, "_TAKE_BELOW", 1 << 40 if request.param == "take" else 0)
    return request.param


def _columns(seed: int, count: int, sizes: tuple[int, ...], null_keys: float) -> tuple[list, list]:
    rng = random.Random(seed)
    keys = [None if rng.random() < null_keys else rng.randbytes(rng.choice((0, 1, 63, 64, 200))) for _ in range(count)]
    values = [None if rng.random() < 0.1 else rng.randbytes(rng.choice(sizes)) for _ in range(count)]
    return keys, values


def _expected(keys: list, values: list, stamps: list[int], compression: str | None) -> bytes:
    return bytes(encode_produced_records([(k, v, (), t) for k, v, t in zip(keys, values, stamps, strict=True)],
                                         compression))


@pytest.mark.parametrize("count", [1, 2, 300, 9000])  # 9000: offset deltas of three bytes
@pytest.mark.parametrize("sizes", [(0, 10, 100), (8191, 8192, 9000), (70_000,)])
def test_same_bytes_as_the_tuple_encoder(count: int, sizes: tuple[int, ...]) -> None:
    count = min(count, 20_000_000 // max(sizes))
    keys, values = _columns(count, count, sizes, 0.2)
    got = encode_columns(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), None, BASE, BASE)
    assert bytes(got) == _expected(keys, values, [BASE] * count, None)


@pytest.mark.parametrize("deltas", [(0, 5), (-3, 0, 7), (8191, 8192, -8193), (2**35, -(2**40))])
def test_timestamp_deltas_of_every_size(deltas: tuple[int, ...]) -> None:
    rng = random.Random(len(deltas))
    keys, values = _columns(3, 500, (0, 50), 0.0)
    stamps = [BASE + rng.choice(deltas) for _ in range(500)]
    stamps[0] = BASE
    got = encode_columns(pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                         np.array(stamps, np.int64) - BASE, BASE, max(stamps))
    assert bytes(got) == _expected(keys, values, stamps, None)


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed(compression: str) -> None:
    keys, values = _columns(5, 700, (0, 30, 300), 0.5)
    got = encode_columns(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), None, BASE, BASE, compression)
    assert bytes(got) == _expected(keys, values, [BASE] * 700, compression)


def test_null_keys_string_large_and_sliced_columns() -> None:
    keys, values = _columns(9, 400, (0, 20, 5000), 0.0)
    text = [None if v is None else v.hex() for v in values]
    as_bytes = [None if t is None else t.encode() for t in text]
    for key_column, value_column, expected_keys, expected_values in [
        (None, pa.array(values, pa.binary()), [None] * 400, values),
        (pa.array(keys, pa.large_binary()), pa.array(text, pa.string()).cast(pa.binary()), keys, as_bytes),
        (pa.array(keys, pa.binary()), pa.array(text, pa.large_string()).cast(pa.large_binary()), keys, as_bytes),
    ]:
        got = encode_columns(key_column, value_column, None, BASE, BASE)
        assert bytes(got) == _expected(expected_keys, expected_values, [BASE] * 400, None)
        # a slice of the columns is the records it holds
        sliced = encode_columns(None if key_column is None else key_column.slice(100, 50), value_column.slice(100, 50),
                                None, BASE, BASE)
        assert bytes(sliced) == _expected(expected_keys[100:150], expected_values[100:150], [BASE] * 50, None)


def test_columns_in_pieces() -> None:
    keys, values = _columns(11, 900, (0, 7, 140), 0.2)
    cuts = [0, 1, 300, 301, 900]
    key_parts = [pa.array(keys[a:b], pa.binary() if i % 2 else pa.large_binary()) for i, (a, b) in
                 enumerate(itertools.pairwise(cuts))]
    value_parts = [pa.array([None, *values[a:b]], pa.binary()).slice(1) for a, b in itertools.pairwise(cuts)]
    got = encode_columns(key_parts, value_parts, None, BASE, BASE)
    assert bytes(got) == _expected(keys, values, [BASE] * 900, None)
    # pieces of null keys beside pieces with keys
    nulls = [pa.nulls(len(v), pa.binary()) if i == 2 else k for i, (k, v) in enumerate(zip(key_parts, value_parts,
                                                                                              strict=True))]
    got = encode_columns(nulls, value_parts, None, BASE, BASE)
    assert bytes(got) == _expected([*keys[:300], None, *keys[301:]], values, [BASE] * 900, None)


def test_rows_picked_from_pieces() -> None:
    keys, values = _columns(13, 1200, (0, 5, 90, 3000), 0.2)
    cuts = [0, 400, 401, 1200]
    key_parts = [pa.array(keys[a:b], pa.binary()) for a, b in itertools.pairwise(cuts)]
    value_parts = [pa.array(values[a:b], pa.large_binary()) for a, b in itertools.pairwise(cuts)]
    # views of the pieces, as a call's columns are kept for its batches, and the plain columns
    key_parts[2], value_parts[0] = column_encoder.as_views(key_parts[2]), column_encoder.as_views(value_parts[0])
    rng = np.random.default_rng(3)
    picks = [np.sort(rng.choice(400, 150, replace=False)), range(0, 1), range(200, 700)]
    rows = [int(cuts[i] + r) for i, pick in enumerate(picks) for r in (pick.tolist() if isinstance(pick, np.ndarray)
                                                                        else pick)]
    got = encode_columns(key_parts, value_parts, None, BASE, BASE, picks=picks)
    assert bytes(got) == _expected([keys[r] for r in rows], [values[r] for r in rows], [BASE] * len(rows), None)


@pytest.mark.parametrize("compression", [None, "lz4"])
@pytest.mark.parametrize("cuts", [(0, 9000), (0, 1, 64, 65, 8191, 8192, 9000), (0, 3000, 3000, 9000)])
def test_laid_out_in_runs_then_framed(cuts: tuple[int, ...], compression: str | None) -> None:
    # the batch's runs are laid out together with other batches' runs around them (offset deltas not from 0)
    keys, values = _columns(17, 9000, (0, 3, 120), 0.2)
    stamps = [BASE + 40 * (i // 500) for i in range(9000)]
    key_column, value_column = pa.array(keys, pa.binary()), pa.array(values, pa.binary())
    laid = []
    for a, b in itertools.pairwise(cuts):
        others = 7
        picks = [range(0, others), range(a, b), range(b, b + others) if b + others <= 9000 else range(0, others)]
        offsets = np.concatenate([np.arange(500, 500 + others), np.arange(a, b), np.arange(others)])
        deltas = np.array([0] * others + [t - BASE for t in stamps[a:b]] + [-5] * others, np.int64)
        pieces = [key_column, key_column, key_column], [value_column, value_column, value_column]
        bytes_, sizes = lay_out_records(*pieces, deltas, offsets, picks=picks)
        ends = np.cumsum(sizes)
        assert int(ends[-1]) == len(bytes_)
        laid.append(bytes_[int(ends[others - 1]):int(ends[others + b - a - 1])] if b > a else memoryview(b""))
    got = frame_records(laid, 9000, BASE, stamps[-1], compression)
    assert bytes(got) == _expected(keys, values, stamps, compression)
    # sealed as it is (uncompressed: the header's run and the pieces, not joined) into the tuple batch's bytes
    want = encode_produced_records([(k, v, (), t) for k, v, t in zip(keys, values, stamps, strict=True)],
                                   compression)
    assert bytes(seal_produced(got, 7, 1, 40, True)) == bytes(seal_produced(want, 7, 1, 40, True))


def test_sealed_in_place_as_the_tuple_batch() -> None:
    keys, values = _columns(4, 200, (0, 99), 0.3)
    batch = encode_columns(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), None, BASE, BASE)
    assert isinstance(batch, memoryview) and not batch.readonly  # the Arrow buffer itself, no copy
    want = encode_produced_records([(k, v, (), BASE) for k, v in zip(keys, values, strict=True)])
    assert bytes(seal_produced(batch, 7, 1, 40, True)) == bytes(seal_produced(want, 7, 1, 40, True))


def test_lengths_and_an_empty_batch() -> None:
    column = pa.array([b"ab", None, b"", b"xyz"], pa.binary()).slice(1)
    assert binary_lengths(column).tolist() == [-1, 0, 3]
    if column_encoder._views_supported():
        views = pa.array([b"ab", None, b"", b"x" * 30], pa.binary()).cast(pa.binary_view()).slice(1)
        assert binary_lengths(views).tolist() == [-1, 0, 30]
    assert bytes(encode_columns(None, pa.array([], pa.binary()), None, -1, -1)) == \
        bytes(encode_produced_records([]))

"""Property tests and fuzzing: any bytes give records or a DecodeError, never a crash, a hang or
unbounded memory; the vectorised decoder always agrees with the record-by-record one."""

from __future__ import annotations

import os
import struct
import tracemalloc
from collections.abc import Callable

import pyarrow as pa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from records_support import arrow_rows, fix_crcs, record_rows

from kafka_spark.errors import DecodeError
from kafka_spark.records import compression, decode_to_arrow, encode_batch, iter_records, scan_batches

# RECORDS_FUZZ_EXAMPLES=5000 for a deeper run than the default suite can afford.
FUZZ = settings(max_examples=int(os.environ.get("RECORDS_FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

keys = st.none() | st.binary(max_size=20)
repeated = st.builds(lambda n, b: b * n, st.integers(0, 20000), st.binary(min_size=1, max_size=3))
values = st.none() | st.binary(max_size=200) | repeated
header_lists = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=10)), max_size=3)
timestamps = st.integers(-(2**40), 2**45)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    """A few batches of random records in random formats and codecs, consecutive offsets."""
    out = []
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        magic = draw(st.sampled_from([0, 1, 2, 2, 2]))
        codec = draw(st.sampled_from(CODECS if magic == 2 else CODECS[:4]))
        headers = header_lists if magic == 2 else st.just([])
        empty_ok = magic == 2 and codec == "none"
        records = draw(st.lists(st.tuples(keys, values, headers, timestamps), min_size=0 if empty_ok else 1,
                                max_size=12))
        out.append(encode_batch(records, magic=magic, compression=codec, base_offset=offset))
        offset += len(records) + draw(st.integers(0, 3))
    return b"".join(out)


def outcome(fn: Callable[[], object]) -> tuple:
    try:
        return ("ok", fn())
    except DecodeError as exc:
        return ("error", type(exc).__name__, str(exc))


def both(buf: bytes, **kw: object) -> tuple[tuple, tuple]:
    scalar = outcome(lambda: record_rows(iter_records(buf, **kw)))
    arrow = outcome(lambda: arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True, **kw).batch))
    return scalar, arrow


@FUZZ
@given(logs())
def test_round_trip_property(buf: bytes) -> None:
    scalar, arrow = both(buf)
    assert scalar[0] == "ok"
    assert arrow == scalar


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes(buf: bytes) -> None:
    scalar, arrow = both(buf)
    assert arrow == scalar
    outcome(lambda: scan_batches(buf, verify_crc=True))


@FUZZ
@given(logs(), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
       st.booleans(), st.booleans())
def test_mutated_logs(buf: bytes, edits: list[tuple[int, int]], recrc: bool, verify: bool) -> None:
    data = bytearray(buf)
    for where, byte in edits:
        data[where % len(data)] = byte
    mutated = fix_crcs(data) if recrc else bytes(data)
    scalar, arrow = both(mutated, verify_crc=verify)
    assert arrow == scalar


@FUZZ
@given(logs(), st.integers(0, 10**6), st.integers(0, 64))
def test_truncated_and_spliced_logs(buf: bytes, cut: int, drop: int) -> None:
    cut %= len(buf) + 1
    for candidate in (buf[:cut], buf[:cut] + buf[cut + drop :]):
        scalar, arrow = both(fix_crcs(bytearray(candidate)), verify_crc=False)
        assert arrow == scalar


@FUZZ
@given(logs(), st.integers(0, 2**41), st.integers(0, 2**41), st.booleans())
def test_offset_windows(buf: bytes, lo: int, span: int, committed: bool) -> None:
    kw = dict(start_offset=lo, end_offset=lo + span, isolation="read_committed" if committed else "read_uncommitted",
              aborted=[(1, lo)])
    scalar, arrow = both(buf, **kw)
    assert arrow == scalar


@FUZZ
@given(st.sampled_from([1, 2, 3, 4]), st.binary(max_size=3000), st.lists(st.integers(0, 10**6), max_size=3),
       st.integers(0, 2))
def test_decompressors_fail_cleanly(codec: int, data: bytes, flips: list[int], magic: int) -> None:
    blob = bytearray(compression.compress(codec, data, magic=magic))
    for where in flips:
        blob[where % len(blob)] ^= 0x5A
    tracemalloc.start()
    try:
        got = outcome(lambda: compression.decompress(codec, bytes(blob), magic=magic, limit=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if not flips:
        assert got == ("ok", data)
    # Output is bounded by the limit whatever the input claims.
    assert peak < (1 << 20) * 3 + 256 * len(blob) + (1 << 20)


@FUZZ
@given(logs(), st.integers(0, 10**6), st.integers(0, 0x7FFFFFFF))
def test_hostile_length_fields_do_not_allocate(buf: bytes, where: int, value: int) -> None:
    # Overwrite a 4-byte field with a large number: sizes, counts and lengths are all checked
    # against the bytes actually present before anything is allocated from them.
    data = bytearray(buf)
    where %= max(1, len(data) - 4)
    assume(len(data) >= 4)
    struct.pack_into(">i", data, where, value)
    mutated = fix_crcs(data)
    pool = pa.default_memory_pool()
    tracemalloc.start()
    try:
        scalar, arrow = both(mutated)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert arrow == scalar
    assert peak < 300 * len(mutated) + (32 << 20)
    assert pool.bytes_allocated() < (64 << 20)

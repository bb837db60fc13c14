"""Hostile input: any bytes decode to a value or raise DecodeError, quickly and in bounded memory."""

from __future__ import annotations

import contextlib
import random
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_values import combos, random_body

from kafka_spark.errors import DecodeError
from kafka_spark.protocol import (
    decode_assignment,
    decode_body,
    decode_request,
    decode_response,
    decode_subscription,
    encode_request,
    encode_response,
    parse_api_versions_response,
    peek_correlation_id,
    read_frame_size,
)

ALL = list(combos())
PAIRS = sorted({(k, v) for k, v, _ in ALL})
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _decodes_or_fails_cleanly(decode, *args) -> None:
    with contextlib.suppress(DecodeError):
        decode(*args)


@FUZZ
@given(pair=st.sampled_from(PAIRS), data=st.binary(max_size=300))
def test_random_bytes_as_responses(pair: tuple[int, int], data: bytes) -> None:
    _decodes_or_fails_cleanly(decode_response, *pair, data)


@FUZZ
@given(combo=st.sampled_from(ALL), data=st.binary(max_size=300))
def test_random_bytes_as_bodies(combo: tuple[int, int, str], data: bytes) -> None:
    _decodes_or_fails_cleanly(decode_body, *combo, data)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_as_requests_and_payloads(data: bytes) -> None:
    for decode in (decode_request, decode_subscription, decode_assignment, peek_correlation_id, read_frame_size):
        _decodes_or_fails_cleanly(decode, data)
    for version in range(5):
        _decodes_or_fails_cleanly(parse_api_versions_response, data, version)


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            del data[pos:]
        elif op == 2:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 3:
            del data[pos : pos + rng.randint(1, 8)]
        else:
            # plant a huge or negative length/count where a length may be read
            marker = rng.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x7f\xff", b"\xff\xff\xff\xff\x0f"))
            data[pos : pos + len(marker)] = marker
    return bytes(data)


@FUZZ
@given(combo=st.sampled_from(ALL), seed=st.integers(0, 2**32))
def test_mutated_valid_frames(combo: tuple[int, int, str], seed: int) -> None:
    api_key, version, kind = combo
    rng = random.Random(seed)
    body = random_body(api_key, version, kind, rng)
    if kind == "request":
        frame = encode_request(api_key, version, 1, "c", body)[4:]
        _decodes_or_fails_cleanly(decode_request, _mutate(frame, rng))
    else:
        frame = encode_response(api_key, version, 1, body)[4:]
        _decodes_or_fails_cleanly(decode_response, api_key, version, _mutate(frame, rng))


HOSTILE = [
    # Fetch v4 response whose records claim 2^31-1 bytes with 10 bytes left
    (1, 4, bytes.fromhex("00000001" "00000000" "00000001" "000174" "00000001" "00000000" "0000")
     + struct.pack(">qq", 10, 8) + b"\xff\xff\xff\xff" + b"\x7f\xff\xff\xff" + bytes(10)),
    # Metadata v0 response claiming 2^31-1 brokers
    (3, 0, bytes.fromhex("00000000" "7fffffff") + bytes(10)),
    # Metadata v9 (compact) response: throttle, then a broker count varint of 2^32-1
    (3, 9, bytes.fromhex("00000000" "00" "00000000" "ffffffff0f") + bytes(10)),
    # Metadata v1 topic name claiming 32767 bytes
    (3, 1, bytes.fromhex("00000000" "00000000" "ffffffff" "00000001" "0000" "7fff") + bytes(10)),
    # ApiVersions v3 response with a tag section claiming 2^28 fields
    (18, 3, bytes.fromhex("00000000" "0000" "01" "00000000" "8080808001") + bytes(10)),
    # a []int32 of 2^30 items (Metadata v0 replica nodes)
    (3, 0, bytes.fromhex("00000000" "00000000" "00000001" "0000" "000161" "00000001" "0000" "00000000"
                         "00000001" "40000000") + bytes(10)),
]


@pytest.mark.parametrize(("api_key", "version", "frame"), HOSTILE)
def test_huge_lengths_fail_before_allocating(api_key: int, version: int, frame: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            decode_response(api_key, version, frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


def test_frame_size_limits() -> None:
    assert read_frame_size(b"\x00\x00\x01\x00") == 256
    with pytest.raises(DecodeError):
        read_frame_size(b"\xff\xff\xff\xff")
    with pytest.raises(DecodeError):
        read_frame_size(b"\x7f\xff\xff\xff", max_size=1 << 20)
    with pytest.raises(DecodeError):
        read_frame_size(b"\x00\x01")


def test_trailing_bytes_are_an_error() -> None:
    frame = encode_response(12, 0, 1, {"error_code": 0})[4:]
    assert decode_response(12, 0, frame)[1]["error_code"] == 0
    with pytest.raises(DecodeError, match="left after"):
        decode_response(12, 0, frame + b"\x00")


def test_null_in_a_non_nullable_field_is_an_error() -> None:
    # Heartbeat v0 request with a null group id
    with pytest.raises(DecodeError, match="string"):
        decode_body(12, 0, "request", bytes.fromhex("ffff" "00000000" "0000"))

"""The producer's batch encoder (`encode_records`) writes byte for byte what the general `encode_batch` writes for the
same records: nulls, headers, lengths and deltas past the looked-up varints, timestamps out of order, every codec,
transactional or not."""

from __future__ import annotations

import random

import pytest

from kafka_spark.client.records_adapter import encode_records
from kafka_spark.records import encode_batch, iter_records
from kafka_spark.records.model import Headers

Record = tuple[bytes | None, bytes | None, Headers, int]


def _records(seed: int, count: int) -> list[Record]:
    rng = random.Random(seed)

    def payload(sizes: tuple[int, ...]) -> bytes | None:
        return None if rng.random() < 0.2 else rng.randbytes(rng.choice(sizes))

    out: list[Record] = []
    for _ in range(count):
        headers = tuple((f"h{i}", None if rng.random() < 0.3 else rng.randbytes(rng.randrange(5)))
                        for i in range(rng.choice((0, 0, 2))))
        out.append((payload((0, 3, 200, 5000)), payload((0, 10, 4095, 4096, 9000)), headers,
                    1_700_000_000_000 + rng.choice((0, 0, 5, -3, 5000, 10**7))))
    return out


@pytest.mark.parametrize("count", [0, 1, 7, 300, 4200])  # 4200: offset deltas past 4095
@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("transactional", [False, True])
def test_same_bytes_as_encode_batch(count: int, compression: str, transactional: bool) -> None:
    records = _records(count, count)
    expected = encode_batch(records, compression=None if compression == "none" else compression, producer_id=7,
                            producer_epoch=2, base_sequence=11, transactional=transactional)
    got = encode_records(records, compression, 7, 2, 11, transactional)
    assert bytes(got) == expected


def test_records_read_back() -> None:
    records = _records(1, 50)
    decoded = list(iter_records(bytes(encode_records(records, "none", 3, 0, 0))))
    assert [(r.key, r.value, tuple(r.headers), r.timestamp) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(50))


@pytest.mark.parametrize("count", [2, 64, 65, 300, 4095, 4096, 4097])  # offset deltas of 1 and 2 bytes, past 4095
@pytest.mark.parametrize("sizes", [(0, 1, 63), (64, 100, 1000), (4000, 4080, 4095), (4096, 5000)])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_same_bytes_for_a_bulk_sends_batch(count: int, sizes: tuple[int, ...], compression: str) -> None:
    # one timestamp, no nulls, no headers (what send_many() queues), lengths and sizes either side of the varint steps
    rng = random.Random(count)
    records: list[Record] = [(rng.randbytes(rng.choice(sizes[:2])), rng.randbytes(rng.choice(sizes)), (),
                              1_700_000_000_000) for _ in range(count)]
    expected = encode_batch(records, compression=None if compression == "none" else compression, producer_id=7,
                            producer_epoch=2, base_sequence=11)
    assert bytes(encode_records(records, compression, 7, 2, 11)) == expected
    # one null, one header or one other timestamp among them: the same bytes too
    for i, change in enumerate(((None, records[-1][1]), (records[-1][0], None))):
        odd = [*records[:-1], (*change, (), records[-1][3])]
        assert bytes(encode_records(odd, "none", 7, 2, 11)) == encode_batch(odd, producer_id=7, producer_epoch=2,
                                                                          base_sequence=11), i
    for odd in ([*records[:-1], (records[-1][0], records[-1][1], (("h", b"x"),), records[-1][3])],
                [*records[:-1], (records[-1][0], records[-1][1], (), records[-1][3] + 1)]):
        assert bytes(encode_records(odd, "none", 7, 2, 11)) == encode_batch(odd, producer_id=7, producer_epoch=2,
                                                                          base_sequence=11)

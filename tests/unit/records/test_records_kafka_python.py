"""kafka-python as an independent oracle: its reader reads our bytes, ours reads its bytes.

kafka-python writes and reads magic-v0 LZ4 (the KAFKA-3160 header checksum) only with the
`xxhash` package; a stand-in exposing the same call is installed for those cases, with the hash
itself checked against published XXH32 vectors in the compression tests.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import kafka.codec
import pytest
from kafka.record.default_records import ControlRecord, DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from records_support import arrow_rows, record_rows

from kafka_spark.records import ControlType, decode_to_arrow, encode_batch, encode_control_batch, iter_records
from kafka_spark.records.lz4frame import xxh32

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CASES = [(m, c) for m in (0, 1, 2) for c in CODEC_IDS if not (m < 2 and c == "zstd")]
TS = 1_650_000_000_000


@pytest.fixture(autouse=True)
def xxhash_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    digest = SimpleNamespace(xxh32=lambda data: SimpleNamespace(digest=lambda: xxh32(bytes(data)).to_bytes(4, "big")))
    monkeypatch.setattr(kafka.codec, "xxhash", digest, raising=False)


def random_records(seed: int, magic: int, n: int = 60) -> list[tuple]:
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"", b"\x00\x01\x02"]
    out = []
    for i in range(n):
        key = None if rng.random() < 0.3 else b"-".join(rng.choices(words, k=rng.randint(0, 4)))
        value = None if rng.random() < 0.1 else b" ".join(rng.choices(words, k=rng.randint(0, 400)))
        headers = []
        if magic == 2:
            for _ in range(rng.randint(0, 3)):
                headers.append((rng.choice(["trace", "ü", "", "x" * 20]), rng.choice([None, b"", b"v" * 5])))
        out.append((key, value, headers, TS + rng.randint(-5000, 5000) + i))
    return out


def kafka_python_rows(buf: bytes) -> list[tuple]:
    rows = []
    for batch in MemoryRecords(bytes(buf)):
        for r in batch:
            if isinstance(r, ControlRecord):
                continue
            ts = -1 if r.timestamp is None else r.timestamp
            tt = -1 if r.timestamp_type is None else r.timestamp_type
            rows.append((r.offset, ts * 1000, tt, r.key, r.value, tuple(r.headers) or None))
    return rows


@pytest.mark.parametrize(("magic", "codec"), CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_kafka_python_reads_ours(magic: int, codec: str, seed: int) -> None:
    records = random_records(seed, magic)
    buf = b"".join(
        encode_batch(records[i : i + 20], magic=magic, compression=codec, base_offset=500 + i) for i in range(0, 60, 20)
    )
    theirs = kafka_python_rows(buf)
    assert len(theirs) == 60
    assert theirs == record_rows(iter_records(buf))
    assert theirs == arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True).batch)


@pytest.mark.parametrize(("magic", "codec"), CASES)
@pytest.mark.parametrize("seed", [3, 4])
def test_we_read_kafka_python(magic: int, codec: str, seed: int, vectorised_only: None) -> None:
    buf = b""
    offset = 1234
    wrapped = magic < 2 and codec != "none"
    for chunk in range(3):
        # A v1 wrapper holds relative inner offsets; a v0 one absolute ones.
        first = 0 if wrapped and magic == 1 else offset
        builder = MemoryRecordsBuilder(magic, CODEC_IDS[codec], batch_size=1 << 20, offset=first)
        if magic == 2 and chunk == 1:
            builder.set_producer_state(producer_id=77, producer_epoch=2, base_sequence=10, is_transactional=False)
        for key, value, headers, ts in random_records(seed * 10 + chunk, magic, n=25):
            assert builder.append(ts, key, value, headers) is not None
        builder.close()
        entry = bytearray(builder.buffer())
        offset += 25
        if wrapped:
            # kafka-python writes produce requests; a broker stores the wrapper at the last offset
            # (outside the CRC, so only the offset field changes).
            entry[0:8] = (offset - 1).to_bytes(8, "big")
        buf += bytes(entry)
    theirs = kafka_python_rows(buf)
    assert len(theirs) == 75
    assert record_rows(iter_records(buf)) == theirs
    assert arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True).batch) == theirs


def test_batch_headers_agree_with_kafka_python() -> None:
    buf = encode_batch(random_records(5, 2, 10), compression="zstd", base_offset=900, producer_id=5,
                       producer_epoch=1, base_sequence=33, transactional=True, partition_leader_epoch=4)
    (theirs,) = list(MemoryRecords(buf))
    assert isinstance(theirs, DefaultRecordBatch)
    assert theirs.validate_crc()
    (ours,) = [r.batch for r in iter_records(buf)][:1]
    assert (theirs.base_offset, theirs.last_offset, theirs.producer_id, theirs.producer_epoch) == (
        ours.base_offset, ours.last_offset, ours.producer_id, ours.producer_epoch)
    assert (theirs.base_sequence, theirs.is_transactional, theirs.max_timestamp, theirs.crc) == (
        ours.base_sequence, ours.is_transactional, ours.max_timestamp, ours.crc)
    assert (theirs.compression_type, theirs.records_count) == (ours.compression, ours.count)


@pytest.mark.parametrize("marker", [ControlType.ABORT, ControlType.COMMIT])
def test_kafka_python_reads_our_control_batches(marker: ControlType) -> None:
    buf = encode_control_batch(marker, base_offset=10, producer_id=3, producer_epoch=1, coordinator_epoch=6)
    (batch,) = list(MemoryRecords(buf))
    assert batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert isinstance(record, ControlRecord)
    assert record.abort == (marker == ControlType.ABORT)
    assert record.commit == (marker == ControlType.COMMIT)
    (ours,) = list(iter_records(buf, include_control=True))
    assert ours.control is not None
    assert (ours.control.type, ours.control.coordinator_epoch, ours.control.name) == (marker, 6, marker.name)

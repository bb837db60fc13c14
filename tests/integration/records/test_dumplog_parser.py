"""The DumpLogSegments parser on sample output (lines in the forms Kafka 4.1 and 3.9 print)."""

from __future__ import annotations

import pytest
from dumplog import DumpFormatError, TxnEntry, parse_dump

V2_BATCH = (
    "baseOffset: 7 lastOffset: 9 count: 3 baseSequence: 4 lastSequence: 6 producerId: 12 producerEpoch: 1"
    " partitionLeaderEpoch: 0 isTransactional: true isControl: {control} deleteHorizonMs: OptionalLong.empty"
    " position: 0 CreateTime: 1700000000123 size: 140 magic: 2 compresscodec: zstd crc: 3505415733 isvalid: true"
)
V2_SAMPLE = "\n".join([
    "Dumping /logs/t-0/00000000000000000007.log",
    "Log starting offset: 7",
    V2_BATCH.format(control="false"),
    # A key and a value that hold the separators themselves, and multi-byte characters.
    "| offset: 7 CreateTime: 1700000000100 keySize: 16 valueSize: 9 sequence: 4 headerKeys: [h,hé]"
    " key: k payload: é☃ payload: key: v ü",
    "| offset: 8 CreateTime: 1699999999000 keySize: -1 valueSize: 0 sequence: 5 headerKeys: [] payload: ",
    "| offset: 9 CreateTime: 1700000000123 keySize: 3 valueSize: -1 sequence: 6 headerKeys: [] key: a\nb",
    V2_BATCH.format(control="true").replace("position: 0", "position: 140"),
    "| offset: 10 CreateTime: 1700000000200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: []"
    " endTxnMarker: ABORT coordinatorEpoch: 3",
    "Dumping /logs/t-0/00000000000000000007.txnindex",
    "version: 0 producerId: 12 firstOffset: 7 lastOffset: 10 lastStableOffset: 11",
    "",
])
LEGACY_SAMPLE = "\n".join([
    "Dumping /logs/t-0/00000000000000000000.log",
    "Log starting offset: 0",
    "offset: 1 position: 0 NoTimestampType: -1 size: 95 magic: 0 compresscodec: lz4 crc: 2358286878 isvalid: true",
    "| offset: 0 NoTimestampType: -1 keySize: -1 valueSize: -1 isValid: true crc: 2817288195}",
    "| offset: 1 NoTimestampType: -1 keySize: 0 valueSize: 2 isValid: true crc: 3817498742} key:  payload: ok",
    "Found 17 invalid bytes at the end of 00000000000000000000.log",
    "",
])


def test_v2_batches_records_and_markers() -> None:
    (log, index) = parse_dump(V2_SAMPLE).values()
    assert log.log_start == 7 and log.invalid_tail == 0
    data, control = log.batches
    assert (data.base_offset, data.last_offset, data.count, data.producer_id, data.producer_epoch) == (7, 9, 3, 12, 1)
    assert (data.is_transactional, data.is_control, control.is_control, control.position) == (True, False, True, 140)
    assert (data.codec, data.crc, data.max_timestamp, data.timestamp_type, data.size) == (
        "zstd", 3505415733, 1700000000123, 0, 140)
    first, second, third = data.records
    assert (first.key, first.value) == ("k payload: é☃".encode(), "key: v ü".encode())
    assert first.header_keys == ("h", "hé") and first.sequence == 4
    assert (second.key, second.value, second.timestamp) == (None, b"", 1699999999000)
    assert (third.key, third.value) == (b"a\nb", None)
    (marker,) = control.records
    assert (marker.offset, marker.end_txn_marker, marker.coordinator_epoch, marker.key) == (10, "ABORT", 3, None)
    assert index.txn_entries == [TxnEntry(12, 7, 10, 11, 0)]


def test_legacy_messages_and_an_invalid_tail() -> None:
    (log,) = parse_dump(LEGACY_SAMPLE).values()
    (wrapper,) = log.batches
    assert (wrapper.last_offset, wrapper.magic, wrapper.codec, wrapper.timestamp_type, wrapper.base_offset) == (
        1, 0, "lz4", -1, None)
    records = [(r.offset, r.key, r.value, r.timestamp) for r in wrapper.records]
    assert records == [(0, None, None, -1), (1, b"", b"ok", -1)]
    assert log.invalid_tail == 17


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (V2_SAMPLE.replace("keySize: 16", "keySize: 17"), "expected ' payload: '"),
        (V2_SAMPLE.replace("keySize: 16", "keySize: 12"), "inside a character"),
        (V2_SAMPLE.replace("valueSize: 9", "valueSize: 7"), "end of the line"),
        # What a JVM writing a non-UTF-8 stdout prints: fewer bytes than the sizes say.
        (V2_SAMPLE.replace("é☃", "??"), "expected ' payload: '"),
        (V2_SAMPLE.replace("Log starting offset: 7", "Log start: 7"), "unknown line"),
        ("\n".join(x for x in LEGACY_SAMPLE.splitlines() if not x.startswith("offset: ")), "before any batch"),
        ("| offset: 1", "before the first 'Dumping'"),
    ],
    ids=["key-too-long", "key-cut-in-a-character", "value-too-short", "not-utf8", "unknown-line",
         "record-without-batch", "record-without-file"],
)
def test_anything_unexpected_is_an_error(text: str, error: str) -> None:
    with pytest.raises(DumpFormatError, match=error):
        parse_dump(text)

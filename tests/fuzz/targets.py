"""Fuzz targets for every decoder: valid seeds, a mutator, and `run(data)` that may only raise KafkaSparkError.

Each target's input is self-describing bytes (a small header says which API, file kind or options),
so a saved crash replays from its file alone. Shared by `run_fuzz.py` (the campaign) and
`tests/unit/test_fuzz_corpus.py` (corpus replay and a short smoke run).
"""

from __future__ import annotations

import contextlib
import json
import random
import struct
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[1]
for _helper in (_TESTS / "unit" / "protocol", _TESTS / "unit" / "records", _TESTS / "fuzz"):
    if str(_helper) not in sys.path:
        sys.path.insert(0, str(_helper))

from avro_block_target import avro_block_seeds, run_avro_block  # noqa: E402
from change_targets import change_seeds, run_changes  # noqa: E402
from columnar_targets import columnar_seeds, run_columnar  # noqa: E402
from format_targets import depth_seeds, registry_seeds, run_depth, run_registry  # noqa: E402
from protocol_values import combos, random_body  # noqa: E402
from records_support import arrow_rows, fix_crcs, record_rows  # noqa: E402

from kafka_spark.cli.kafka_json import kafka_json  # noqa: E402
from kafka_spark.errors import KafkaSparkError  # noqa: E402
from kafka_spark.formats.registry.wire import frame, split  # noqa: E402
from kafka_spark.protocol import (  # noqa: E402
    decode_assignment,
    decode_response,
    decode_subscription,
    encode_response,
    parse_api_versions_response,
)
from kafka_spark.protocol.control import (  # noqa: E402
    decode_kraft_control,
    encode_kraft_control,
    is_kraft_control,
    kraft_control_fields,
)
from kafka_spark.records import (  # noqa: E402
    ControlType,
    decode_to_arrow,
    encode_batch,
    encode_control_batch,
    iter_records,
    scan_batches,
)
from kafka_spark.records.crc import crc32c  # noqa: E402
from kafka_spark.segments import (  # noqa: E402
    Segment,
    SegmentFiles,
    offset_index,
    parse_leader_epochs,
    parse_offset_checkpoint,
    read_segment,
    read_snapshot,
    read_txn_index,
    time_index,
)
from kafka_spark.segments.indexes import check_offset_index, check_time_index  # noqa: E402

RESPONSE_PAIRS = sorted({(k, v) for k, v, _ in combos(("response",))})
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ALLOWED = KafkaSparkError
# Decompressed output allowed per input: small, so a hostile ratio is found fast and memory stays low.
_DECOMPRESS_LIMIT = 4 << 20

_INTERESTING32 = (0, 1, -1, 0x7FFFFFFF, -0x80000000, 0x7FFFFFFE, 0x10000, 0x40000000, 17, 61, 49)
_MARKERS = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x7f\xff", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08",
            b"\x00\x00\x00\x00", b"\xff\xff")


def mutate(data: bytes, rng: random.Random, seeds: list[bytes], keep: int = 0) -> bytes:
    """A few random edits of `data` (bit flips, planted lengths, cuts, inserts, splices), keeping `keep` head bytes."""
    head, buf = data[:keep], bytearray(data[keep:])
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 8))):
        op = rng.randrange(9)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[min(pos, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[min(pos, len(buf) - 1)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif op == 2:
            del buf[pos:]
        elif op == 3:
            buf[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif op == 4:
            del buf[pos:pos + rng.randint(1, 32)]
        elif op == 5:
            marker = rng.choice(_MARKERS)
            buf[pos:pos + len(marker)] = marker
        elif op == 6 and len(buf) >= 4:
            at = rng.randrange(len(buf) - 3)
            value = rng.choice(_INTERESTING32) + rng.choice((0, 0, 1, -1))
            struct.pack_into(">I", buf, at, value & 0xFFFFFFFF)
        elif op == 7 and buf:
            start = rng.randrange(len(buf))
            buf[pos:pos] = buf[start:start + rng.randint(1, 64)]
        else:
            other = rng.choice(seeds)[keep:]
            cut = rng.randrange(len(other) + 1)
            buf = buf[:pos] + bytearray(other[cut:])
    return head + bytes(buf)


@dataclass
class Target:
    """A decoder under fuzz: `run` raises only KafkaSparkError; `prepare` fixes checksums after a mutation."""

    name: str
    seeds: Callable[[random.Random], list[bytes]]
    run: Callable[[bytes], Any]
    keep: int = 0
    prepare: Callable[[bytes, random.Random], bytes] | None = None


# ---- protocol responses ------------------------------------------------------------------------

def _protocol_seeds(rng: random.Random) -> list[bytes]:
    out = []
    for key, version in RESPONSE_PAIRS:
        for _ in range(2):
            body = encode_response(key, version, rng.randrange(1 << 31), random_body(key, version, "response", rng))
            out.append(struct.pack(">hh", key, version) + body[4:])
    # consumer-protocol payloads under the pseudo keys -1 (subscription) and -2 (assignment)
    out.append(struct.pack(">hh", -1, 0) + bytes.fromhex("0001" "00000002" "000174" "000175" "00000000"))
    out.append(struct.pack(">hh", -2, 0) + bytes.fromhex("0001" "00000001" "000174" "00000001" "00000000" "00000000"))
    return out


def run_protocol(data: bytes) -> object:
    """Decode a response frame payload of the API and version named by the 4-byte header."""
    if len(data) < 4:
        return None
    key, version = struct.unpack_from(">hh", data)
    payload = data[4:]
    if key == -1:
        return decode_subscription(payload)
    if key == -2:
        return decode_assignment(payload)
    if (key, version) not in RESPONSE_PAIRS:
        return None
    if key == 18:  # the client reads ApiVersions through its own lenient entry point first
        with contextlib.suppress(ALLOWED):
            parse_api_versions_response(payload, version)
    return decode_response(key, version, payload)


# ---- record batches ------------------------------------------------------------------------------

def _records(rng: random.Random, n: int) -> list[tuple]:
    out = []
    for i in range(n):
        key = None if i % 3 == 0 else rng.randbytes(rng.randint(0, 12))
        value = None if i % 7 == 6 else rng.randbytes(rng.choice((0, 5, 40))) * rng.choice((1, 1, 30))
        headers = [("h", rng.randbytes(3)), ("n", None)] if i % 2 else []
        out.append((key, value, headers, 1_700_000_000_000 + i))
    return out


def _batch_seeds(rng: random.Random) -> list[bytes]:
    out = []
    offset = 0
    for magic in (0, 1, 2):
        for codec in CODECS:
            if magic < 2 and codec == "zstd":
                continue
            n = rng.randint(1, 6)
            recs = _records(rng, n) if magic == 2 else [(k, v, [], t) for k, v, _, t in _records(rng, n)]
            out.append(encode_batch(recs, magic=magic, compression=codec, base_offset=offset))
            offset += n
    pid = 7
    txn = encode_batch(_records(rng, 3), base_offset=offset, producer_id=pid, producer_epoch=0, base_sequence=0,
                       transactional=True)
    marker = encode_control_batch(ControlType.ABORT, base_offset=offset + 3, producer_id=pid, producer_epoch=0,
                                  timestamp=1_700_000_000_000)
    out.append(txn + marker)
    out.append(encode_batch(_records(rng, 4), base_offset=offset + 4, compression="lz4", offset_deltas=[0, 2, 5, 9]))
    # a log of several formats back to back, as a topic upgraded over time holds
    out.append(b"".join(out[i] for i in (0, 5, 9, 12)))
    return out


def _flags_prefixed(seeds: list[bytes], rng: random.Random) -> list[bytes]:
    return [bytes([rng.randrange(256)]) + s for s in seeds]


def _prepare_records(data: bytes, rng: random.Random) -> bytes:
    if data and rng.random() < 0.3:  # new options for the same bytes
        data = bytes([rng.randrange(256)]) + data[1:]
    return fix_crcs(data, 1) if rng.random() < 0.6 else data


def run_records(data: bytes) -> object:
    """Decode record batches both ways (per record and vectorised) with options from the flags byte (bit 3: the
    vectorised decoder's keys and values as views into the input)."""
    if not data:
        return None
    flags, buf = data[0], data[1:]
    kw: dict[str, Any] = {"verify_crc": bool(flags & 1), "max_decompressed_bytes": _DECOMPRESS_LIMIT}
    if flags & 2:
        kw.update(isolation="read_committed", aborted=[(7, 0), (flags >> 4, 3)])
    if flags & 4:
        kw.update(start_offset=flags >> 4, end_offset=(flags >> 4) + 9)
    scan_batches(buf, verify_crc=bool(flags & 1))
    scalar = _outcome(lambda: record_rows(iter_records(buf, **kw)))
    views = bool(flags & 8)
    arrow = _outcome(lambda: arrow_rows(decode_to_arrow(buf, "t", 0, include_headers=True, views=views, **kw).batch))
    if scalar[0] == "ok" and arrow[0] == "ok" and scalar != arrow:
        # both decoders accepted the bytes: they must agree, or one of them returns wrong rows
        raise AssertionError("the vectorised and the per-record decoders disagree")
    for result in (scalar, arrow):
        if result[0] == "error":
            raise result[1]
    return scalar[1]


def _outcome(fn: Callable[[], object]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except ALLOWED as exc:
        return "error", exc


# ---- segment files ------------------------------------------------------------------------------

class _MemSource:
    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.size = len(data)

    def read(self, position: int, length: int) -> bytes:
        if position < 0 or length < 0 or position + length > self.size:
            raise EOFError(f"{self.path}: read of {length} bytes at {position} is past the end ({self.size})")
        return self.data[position:position + length]

    def close(self) -> None:
        pass


class _MemStorage:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def list(self, path: str) -> list:
        return []

    def open(self, path: str) -> _MemSource:
        if path not in self.files:
            raise FileNotFoundError(path)
        return _MemSource(path, self.files[path])

    def exists(self, path: str) -> bool:
        return path in self.files

    def join(self, *parts: str) -> str:
        return "/".join(parts)


_BASE = 100


def _segment_seeds(rng: random.Random) -> list[bytes]:
    out = []
    for codec in CODECS:
        log, index, tindex = bytearray(), bytearray(), bytearray()
        offset = _BASE
        for i in range(rng.randint(2, 6)):
            n = rng.randint(1, 5)
            if i % 2:
                index += struct.pack(">ii", offset - 1 - _BASE, len(log))
                tindex += struct.pack(">qi", 1_700_000_000_000 + offset, offset - 1 - _BASE)
            log += encode_batch(_records(rng, n), base_offset=offset, compression=codec)
            offset += n
        txn = struct.pack(">hqqqq", 0, 7, _BASE, offset, _BASE)
        out.append(_pack_segment(bytes(log), bytes(index), bytes(tindex), txn))
    return out


def _pack_segment(log: bytes, index: bytes, tindex: bytes, txn: bytes) -> bytes:
    return struct.pack(">iii", len(log), len(index), len(tindex)) + log + index + tindex + txn


def _unpack_segment(data: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    if len(data) < 12:
        return data, b"", b"", b""
    sizes = [max(0, s) for s in struct.unpack_from(">iii", data)]
    parts, pos = [], 12
    for size in sizes:
        parts.append(data[pos:pos + size])
        pos += size
    return parts[0], parts[1], parts[2], data[pos:]


def _prepare_segment(data: bytes, rng: random.Random) -> bytes:
    if rng.random() >= 0.6 or len(data) < 12:
        return data
    log, index, tindex, txn = _unpack_segment(data)
    return _pack_segment(fix_crcs(log), index, tindex, txn)


def run_segment(data: bytes) -> object:
    """Read a segment (log, index, timeindex, txnindex from the packed input) through every entry point."""
    log, index, tindex, txn = _unpack_segment(data)
    files = SegmentFiles(_BASE, "s/00.log", "s/00.index", "s/00.timeindex", "s/00.txnindex")
    storage = _MemStorage({files.log: log, "s/00.index": index, "s/00.timeindex": tindex, "s/00.txnindex": txn})
    rows = 0
    with Segment(files, storage) as seg:
        aborted = seg.aborted_transactions()
        for batch in read_segment(seg, "t", 0, aborted=aborted, isolation="read_committed", include_headers=True):
            rows += batch.num_rows
        for batch in read_segment(seg, "t", 0, start_offset=_BASE + 3, end_offset=_BASE + 8, skip_corrupt=True,
                                  views=True):
            rows += batch.num_rows
        seg.next_offset()
        seg.batch_at(_BASE + 5)
        seg.offset_for_timestamp(1_700_000_000_003)
    return rows


# ---- index files, checkpoints, snapshots --------------------------------------------------------

def _index_seeds(rng: random.Random) -> list[bytes]:
    offsets = b"".join(struct.pack(">ii", i * 3, i * 100) for i in range(8))
    times = b"".join(struct.pack(">qi", 1_700_000_000_000 + i * 10, i * 3) for i in range(8))
    txns = b"".join(struct.pack(">hqqqq", 0, 7 + i, i * 5, i * 5 + 4, i * 5) for i in range(3))
    return [b"o" + offsets, b"o" + offsets + bytes(24), b"t" + times, b"t" + times + bytes(12), b"x" + txns]


def run_index(data: bytes) -> object:
    """Parse an `.index` (o), `.timeindex` (t) or `.txnindex` (x) and look entries up."""
    if not data:
        return None
    kind, body = data[:1], data[1:]
    if kind == b"o":
        check_offset_index(body, _BASE, "i")
        idx = offset_index(body, _BASE, log_size=1000)
        return idx.lookup(_BASE + 7), idx.upper_position(_BASE + 7)
    if kind == b"t":
        check_time_index(body, _BASE, "t")
        return time_index(body, _BASE).lookup(1_700_000_000_030)
    return read_txn_index(body, "x")


def _checkpoint_seeds(rng: random.Random) -> list[bytes]:
    return [b"o0\n3\ntopic-a 0 17\ntopic-a 1 0\n__consumer_offsets 12 4\n", b"o0\n0\n",
            b"e0\n2\n0 0\n3 120\n", b"e0\n1\n7 99\n"]


def run_checkpoint(data: bytes) -> object:
    """Parse a log-dir offset checkpoint (o) or a leader-epoch checkpoint (e)."""
    if not data:
        return None
    text = data[1:].decode("utf-8", "replace")
    return parse_offset_checkpoint(text, "c") if data[:1] == b"o" else parse_leader_epochs(text, "c")


def _snapshot(entries: list[tuple[int, ...]]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c(body)) + body


def _snapshot_seeds(rng: random.Random) -> list[bytes]:
    return [_snapshot([]), _snapshot([(1000, 0, 4, 50, 4, 1_700_000_000_000, -1, -1)]),
            _snapshot([(1000 + i, i, 9, 80 + i, 2, 1_700_000_000_000, 3, 40 + i) for i in range(4)])]


def _prepare_snapshot(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.6 and len(data) >= 6:
        return data[:2] + struct.pack(">I", crc32c(data[6:])) + data[6:]
    return data


def _kraft_control_seeds(rng: random.Random) -> list[bytes]:
    voter = {"voter_id": 3, "voter_directory_id": uuid.UUID(int=rng.getrandbits(128)),
             "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}],
             "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}}
    values = {2: {"version": 0, "leader_id": 1, "voters": [{"voter_id": 1}, {"voter_id": 2}],
                  "granting_voters": [{"voter_id": 1}]},
              3: {"version": 0, "last_contained_log_timestamp": 1_700_000_000_000},
              4: {"version": 0},
              5: {"version": 0, "k_raft_version": 1},
              6: {"version": 0, "voters": [voter, {**voter, "voter_id": 4, "endpoints": []}]}}
    return [bytes([t]) + encode_kraft_control(t, v) for t, v in values.items()]


def run_kraft_control(data: bytes) -> object:
    """Decode a KRaft control record value (type from the first byte) and print it as Kafka's JSON."""
    if not data or not is_kraft_control(data[0]):
        return None
    return kafka_json(kraft_control_fields(data[0]), decode_kraft_control(data[0], data[1:]))


# ---- Confluent framing of keys and values --------------------------------------------------------

def _framing_seeds(rng: random.Random) -> list[bytes]:
    out = [b"\x00" + frame(rng.randrange(1 << 31), rng.randbytes(rng.randint(0, 12))) for _ in range(3)]
    for indexes in ((0,), (1,), (1, 0), (3, 1, 70), (200,)):
        out.append(b"\x01" + frame(rng.randrange(1 << 31), rng.randbytes(rng.randint(0, 12)), indexes))
    out.append(b"\x01" + bytes(5) + b"\x02\x00payload")  # [0] in its long form
    return out


def run_framing(data: bytes) -> object:
    """Split a framed value (Protobuf's message indexes when the flags byte is odd); frame what was read and
    split it again: the same id, indexes and payload must come back."""
    if not data:
        return None
    protobuf = bool(data[0] & 1)
    schema_id, indexes, payload = split(data[1:], protobuf)
    again = split(frame(schema_id, bytes(payload), indexes if protobuf else None), protobuf)
    if again[:2] != (schema_id, indexes) or again[2] != payload:
        raise AssertionError("framing what split read does not split back to the same values")
    return schema_id, indexes


# ---- JSON values parsed as Spark's from_json would (the direct writer's value_schema) -----------------

def _field(name: str, kind: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


# Every type the parser serves, a DECIMAL and a FLOAT at the top (msgspec's decoder) ...
_JSON_FIELDS = [
    _field("i", "integer"), _field("l", "long"), _field("t", "byte"), _field("d", "double"), _field("f", "float"),
    _field("s", "string"), _field("b", "boolean"), _field("a", "decimal(10,2)"),
    _field("xs", {"type": "array", "elementType": "long", "containsNull": True}),
    _field("m", {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}),
    _field("st", {"type": "struct", "fields": [_field("x", "integer"), _field("y", "string")]}),
]
_JSON_SCHEMA = json.dumps({"type": "struct", "fields": _JSON_FIELDS})
_JSON_PARSERS: list[Any] = []


def _json_seeds(rng: random.Random) -> list[bytes]:
    return [b'{"i":1,"l":-2,"t":3,"d":1.5,"f":0.25,"s":"x\\u00e9","b":true,"a":12.34,"xs":[1,null],'
            b'"m":{"k":"v"},"st":{"x":7,"y":null},"extra":[{"q":1}]}',
            b'{"s":"\xf0\x9f\x98\x80","a":-0.5,"xs":[],"m":{},"st":{}}', b"{}", b'{"i":2147483647}',
            b'{"d":1e308,"f":3.4e38,"a":99999999.99,"t":-128}', b'  {"s" : "a\\nb" , "b" : false }  ']


def run_spark_json(data: bytes) -> object:
    """Parse one value with both of SparkJson's decoders (msgspec's and Python's scanner): each returns the
    row or refuses with NotCertain, and when both return, the rows are the same."""
    import pyarrow as pa

    from kafka_spark.formats.spark_json.parser import NotCertain, SparkJson

    if not _JSON_PARSERS:
        _JSON_PARSERS.extend([SparkJson(_JSON_SCHEMA, typed=True), SparkJson(_JSON_SCHEMA, typed=False)])
    rows = []
    for parser in _JSON_PARSERS:
        try:
            rows.append(parser.parse(pa.array([data], pa.binary())).to_pylist()[0])
        except NotCertain:
            rows.append(None)
    typed, scanned = rows
    if typed is not None and scanned is not None and repr(typed) != repr(scanned):
        raise AssertionError(f"the decoders disagree: {typed!r} != {scanned!r}")
    return typed


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("protocol", _protocol_seeds, run_protocol, keep=4),
    Target("records", lambda rng: _flags_prefixed(_batch_seeds(rng), rng), run_records, keep=1,
           prepare=_prepare_records),
    Target("segment", _segment_seeds, run_segment, prepare=_prepare_segment),
    Target("index", _index_seeds, run_index, keep=1),
    Target("checkpoint", _checkpoint_seeds, run_checkpoint, keep=1),
    Target("snapshot", _snapshot_seeds, read_snapshot, prepare=_prepare_snapshot),
    Target("kraft-control", _kraft_control_seeds, run_kraft_control, keep=1),
    Target("framing", _framing_seeds, run_framing, keep=1),
    Target("spark-json", _json_seeds, run_spark_json),
    Target("registry-http", registry_seeds, run_registry),
    Target("json-schema-depth", depth_seeds, run_depth),
    Target("columnar", columnar_seeds, run_columnar, keep=1),
    Target("avro-block", avro_block_seeds, run_avro_block, keep=1),
    Target("change-events", change_seeds, run_changes, keep=1),
)}

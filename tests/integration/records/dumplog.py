"""A strict parser for the output of Kafka's DumpLogSegments (--deep-iteration --print-data-log).

Keys and payloads are printed as text after `key: ` / `payload: ` with nothing to delimit them, so
they are read by their byte length (`keySize` / `valueSize`, as UTF-8): text containing spaces,
`payload:` or even newlines parses exactly, and a size the printed text does not match is an
error, never a silent mis-parse. Any line this parser does not know is an error too, so a change in
the tool's format cannot make a comparison vacuous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

TIMESTAMP_TYPES = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}
_TS = "(?P<ts_type>NoTimestampType|CreateTime|LogAppendTime): (?P<ts>-?\\d+)"

_V2_BATCH = re.compile(
    r"baseOffset: (?P<base>\d+) lastOffset: (?P<last>\d+) count: (?P<count>\d+)"
    r" baseSequence: (?P<base_seq>-?\d+) lastSequence: (?P<last_seq>-?\d+)"
    r" producerId: (?P<pid>-?\d+) producerEpoch: (?P<epoch>-?\d+) partitionLeaderEpoch: (?P<leader_epoch>-?\d+)"
    r" isTransactional: (?P<txn>true|false) isControl: (?P<control>true|false) deleteHorizonMs: (?P<horizon>\S+)"
    r" position: (?P<pos>\d+) " + _TS + r" size: (?P<size>\d+) magic: (?P<magic>\d+)"
    r" compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) isvalid: (?P<valid>true|false)$"
)
_LEGACY_BATCH = re.compile(
    r"offset: (?P<last>\d+) position: (?P<pos>\d+) " + _TS + r" size: (?P<size>\d+) magic: (?P<magic>\d+)"
    r" compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) isvalid: (?P<valid>true|false)$"
)
_RECORD = re.compile(r"\| offset: (?P<offset>\d+) " + _TS + r" keySize: (?P<ks>-?\d+) valueSize: (?P<vs>-?\d+)")
_V2_RECORD_REST = re.compile(
    r" sequence: (?P<seq>-?\d+) headerKeys: \[(?P<hkeys>[^\]\n]*)\]"
    r"(?: endTxnMarker: (?P<marker>\w+) coordinatorEpoch: (?P<coord>-?\d+))?"
)
# The tool prints a stray "}" after a legacy record's CRC.
_LEGACY_RECORD_REST = re.compile(r" isValid: (?P<valid>true|false) crc: (?P<crc>\d+)\}?")
_TXN_ENTRY = re.compile(
    r"version: (?P<version>\d+) producerId: (?P<pid>-?\d+) firstOffset: (?P<first>-?\d+)"
    r" lastOffset: (?P<last>-?\d+) lastStableOffset: (?P<lso>-?\d+)$"
)
_LOG_START = re.compile(r"Log starting offset: (?P<offset>\d+)$")
# A segment that ends inside a batch (an active segment mid-append, or a crash) ends with this line.
_INVALID_TAIL = re.compile(r"Found (?P<bytes>\d+) invalid bytes at the end of \S+$")


class DumpFormatError(ValueError):
    """The text is not DumpLogSegments output as this parser knows it."""


@dataclass(frozen=True)
class DumpedRecord:
    """A record line. `sequence`, `header_keys` and the marker fields exist for magic v2 only."""

    offset: int
    timestamp_type: int
    timestamp: int
    key_size: int
    value_size: int
    key: bytes | None
    value: bytes | None
    sequence: int | None = None
    header_keys: tuple[str, ...] | None = None
    end_txn_marker: str | None = None
    coordinator_epoch: int | None = None


@dataclass(frozen=True)
class DumpedBatch:
    """A batch line (v2) or a top-level message line (v0/v1, where only the last offset is shown)."""

    position: int
    size: int
    magic: int
    codec: str
    crc: int
    valid: bool
    timestamp_type: int
    max_timestamp: int
    last_offset: int
    base_offset: int | None = None
    count: int | None = None
    base_sequence: int | None = None
    last_sequence: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    partition_leader_epoch: int | None = None
    is_transactional: bool | None = None
    is_control: bool | None = None
    delete_horizon: str | None = None
    records: list[DumpedRecord] = field(default_factory=list)


@dataclass(frozen=True)
class TxnEntry:
    """An aborted transaction as a .txnindex holds it."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


@dataclass
class DumpedFile:
    """Everything the tool printed for one file."""

    path: str
    log_start: int | None = None
    invalid_tail: int = 0
    batches: list[DumpedBatch] = field(default_factory=list)
    txn_entries: list[TxnEntry] = field(default_factory=list)

    @property
    def records(self) -> list[DumpedRecord]:
        return [r for b in self.batches for r in b.records]


class _Cursor:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def done(self) -> bool:
        return self.pos >= len(self.text)

    def error(self, why: str) -> DumpFormatError:
        line_no = self.text.count("\n", 0, self.pos) + 1
        line_start = self.text.rfind("\n", 0, self.pos) + 1
        line_end = self.text.find("\n", self.pos)
        line = self.text[line_start : line_end if line_end >= 0 else len(self.text)]
        return DumpFormatError(f"line {line_no}: {why}: {line[:300]!r}")

    def startswith(self, prefix: str) -> bool:
        return self.text.startswith(prefix, self.pos)

    def match(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        m = pattern.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def expect(self, literal: str) -> None:
        if not self.startswith(literal):
            raise self.error(f"expected {literal!r}")
        self.pos += len(literal)

    def line(self) -> str:
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        line, self.pos = self.text[self.pos : end], end
        self.end_of_line()
        return line

    def end_of_line(self) -> None:
        if self.startswith("\n"):
            self.pos += 1
        elif not self.done():
            raise self.error("unexpected text at the end of the line")

    def utf8(self, size: int) -> bytes:
        """The next `size` bytes of UTF-8 text (each character is at least one byte)."""
        chunk = self.text[self.pos : self.pos + size].encode("utf-8")[:size]
        try:
            chars = len(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            raise self.error(f"{size} bytes end inside a character") from None
        if len(chunk) != size:
            raise self.error(f"expected {size} bytes of text, found {len(chunk)}")
        self.pos += chars
        return chunk


def _record(cur: _Cursor, magic: int, control: bool) -> DumpedRecord:
    m = cur.match(_RECORD)
    if m is None:
        raise cur.error("not a record line")
    record = DumpedRecord(int(m["offset"]), TIMESTAMP_TYPES[m["ts_type"]], int(m["ts"]), int(m["ks"]), int(m["vs"]),
                          None, None)
    if magic >= 2:
        rest = cur.match(_V2_RECORD_REST)
        if rest is None:
            raise cur.error("v2 record fields missing")
        keys = tuple(rest["hkeys"].split(",")) if rest["hkeys"] else ()
        coordinator_epoch = int(rest["coord"]) if rest["marker"] else None
        record = replace(record, sequence=int(rest["seq"]), header_keys=keys, end_txn_marker=rest["marker"],
                         coordinator_epoch=coordinator_epoch)
    elif cur.match(_LEGACY_RECORD_REST) is None:
        raise cur.error("legacy record fields missing")
    # Control records print their marker instead of a key and payload.
    if not control:
        if record.key_size >= 0:
            cur.expect(" key: ")
            record = replace(record, key=cur.utf8(record.key_size))
        if record.value_size >= 0:
            cur.expect(" payload: ")
            record = replace(record, value=cur.utf8(record.value_size))
    cur.end_of_line()
    return record


def _batch(m: re.Match[str]) -> DumpedBatch:
    batch = DumpedBatch(
        position=int(m["pos"]), size=int(m["size"]), magic=int(m["magic"]), codec=m["codec"], crc=int(m["crc"]),
        valid=m["valid"] == "true", timestamp_type=TIMESTAMP_TYPES[m["ts_type"]], max_timestamp=int(m["ts"]),
        last_offset=int(m["last"]),
    )
    if m.re is not _V2_BATCH:
        return batch
    return replace(
        batch, base_offset=int(m["base"]), count=int(m["count"]), base_sequence=int(m["base_seq"]),
        last_sequence=int(m["last_seq"]), producer_id=int(m["pid"]), producer_epoch=int(m["epoch"]),
        partition_leader_epoch=int(m["leader_epoch"]), is_transactional=m["txn"] == "true",
        is_control=m["control"] == "true", delete_horizon=m["horizon"],
    )


def parse_dump(text: str) -> dict[str, DumpedFile]:
    """Parse DumpLogSegments output into one DumpedFile per dumped path (in the order dumped)."""
    files: dict[str, DumpedFile] = {}
    current: DumpedFile | None = None
    cur = _Cursor(text)
    while not cur.done():
        if cur.startswith("Dumping "):
            cur.expect("Dumping ")
            path = cur.line()
            current = files[path] = DumpedFile(path)
            continue
        if current is None:
            raise cur.error("output before the first 'Dumping' line")
        if cur.startswith("| offset: "):
            if not current.batches:
                raise cur.error("a record line before any batch line")
            batch = current.batches[-1]
            batch.records.append(_record(cur, batch.magic, bool(batch.is_control)))
            continue
        line = cur.line()
        for pattern in (_V2_BATCH, _LEGACY_BATCH):
            m = pattern.match(line)
            if m:
                current.batches.append(_batch(m))
                break
        else:
            if m := _LOG_START.match(line):
                current.log_start = int(m["offset"])
            elif m := _INVALID_TAIL.match(line):
                current.invalid_tail = int(m["bytes"])
            elif m := _TXN_ENTRY.match(line):
                current.txn_entries.append(
                    TxnEntry(int(m["pid"]), int(m["first"]), int(m["last"]), int(m["lso"]), int(m["version"]))
                )
            else:
                raise DumpFormatError(f"unknown line in DumpLogSegments output: {line[:300]!r}")
    return files

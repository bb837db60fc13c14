"""`kafka-spark dump-log FILE...`: Kafka's log files printed as `kafka-dump-log.sh` prints them.

The text output matches Kafka's DumpLogSegments (4.1) line for line, its quirks included: the
stray `}` after a v0/v1 record's CRC, the trailing space of producer-snapshot lines, summaries on
stderr with the newest pair first. Where Kafka's tool dies with a stack trace (a missing `.log`,
a zero-filled tail, a name without an offset) this prints the same stdout up to that point, then one
line on stderr, and exits 1. `--json` prints one JSON object per line instead (our own format).
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from kafka_spark.cli.dump_log_lines import (
    DEFAULT_MAX_MESSAGE_SIZE,
    INT_MAX,
    DumpError,
    Options,
    Output,
    batch_json,
    batch_line,
    batch_valid,
    optional_long,
    record_json,
    record_line,
)
from kafka_spark.errors import KafkaSparkError
from kafka_spark.records.model import BatchInfo
from kafka_spark.segments import (
    IndexCorruptError,
    SnapshotCorruptError,
    Source,
    deep_records,
    offset_index,
    read_snapshot,
    read_txn_index,
    resolve,
    scan_chunks,
)
from kafka_spark.segments.indexes import (
    check_offset_index,
    check_time_index,
    kafka_entries,
    offset_slots,
    time_slots,
)
from kafka_spark.segments.names import INDEX, LOG

_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEPARATORS = re.compile(r"/{2,}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump-log", help="print Kafka log files (.log, indexes, snapshots) as kafka-dump-log.sh does")
    p.add_argument("paths", nargs="*", metavar="FILE", help="segment, index, txnindex or snapshot files")
    p.add_argument("--files", help="comma-separated files, as kafka-dump-log.sh takes them")
    p.add_argument("--print-data-log", action="store_true", help="print keys and values (implies --deep-iteration)")
    p.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    p.add_argument("--skip-record-metadata", action="store_true", help="omit per-record metadata")
    p.add_argument("--verify-index-only", action="store_true", help="check index entries without printing them")
    p.add_argument("--index-sanity-check", action="store_true", help="run the broker's index sanity check only")
    p.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE,
                   help="largest batch looked at when verifying an .index")
    p.add_argument("--max-bytes", type=int, default=INT_MAX, help="read at most this many bytes of each .log")
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of Kafka's text")
    p.set_defaults(run=run)


@dataclass
class Findings:
    """What DumpLogSegments reports on stderr after all files, keyed by absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    ts_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    ts_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    ts_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _java_path(path: str) -> str:
    """The path as java.io.File prints it: repeated and trailing separators dropped."""
    text = _SEPARATORS.sub("/", path)
    return text.rstrip("/") or text


def _base_of(name: str) -> int:
    head = name.split(".")[0]
    if not head.lstrip("-").isdigit():
        raise DumpError(f'For input string: "{head}" (the file name must start with an offset)')
    return int(head)


def _sibling(path: str, suffix: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, name.split(".")[0] + suffix)


def _open(path: str) -> Source:
    storage, inner = resolve(path)
    try:
        return storage.open(inner)
    except FileNotFoundError:
        raise DumpError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DumpError(f"{path}: is a directory") from None
    except PermissionError:
        raise DumpError(f"{path}: permission denied") from None


def _read_all(path: str) -> bytes:
    source = _open(path)
    try:
        return source.read(0, source.size)
    finally:
        source.close()


def _batches(source: Source, base: int, start: int, end: int) -> Iterator[tuple[memoryview, BatchInfo, int]]:
    """(buffer, batch, file position) of each whole batch in [start, end), Kafka's framing rules."""
    for chunk in scan_chunks(source, base, start, end, zero_tail_is_end=False):
        buf = memoryview(chunk.data)
        for info in chunk.batches:
            yield buf, info, chunk.position + info.position


def dump_log(path: str, opts: Options, out: Output, findings: Findings) -> None:
    name = os.path.basename(path)
    if name.endswith(LOG):
        base = _base_of(name)
        out.line(f"Log starting offset: {base}")
    elif name == "bootstrap.checkpoint":
        base = 0
        out.line("KRaft bootstrap snapshot")
    else:
        m = _SNAPSHOT_NAME.match(name)
        if m is None:
            raise DumpError(f"{path} is not a KRaft snapshot file name (<20-digit offset>-<10-digit epoch>.checkpoint)")
        base = 0
        out.line(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
    out.obj(file=path, kind="log", base_offset=base)
    source = _open(path)
    try:
        end = min(source.size, opts.max_bytes)
        valid_bytes = 0
        last = -1
        pairs = findings.non_consecutive.get(os.path.abspath(path), [])
        for buf, info, _ in _batches(source, base, 0, end):
            ok = batch_valid(buf, info)
            out.line(batch_line(info, valid_bytes, ok))
            batch_obj = batch_json(info, valid_bytes, ok) if out.as_json else None
            if opts.deep:
                records = []
                for deep in deep_records(buf, info):
                    offset = deep.record.offset
                    if last == -1:
                        last = offset
                    elif offset != last + 1:
                        pairs.insert(0, (last, offset))
                    last = offset
                    out.line(record_line(deep, info, opts))
                    if batch_obj is not None:
                        records.append(record_json(deep, opts))
                if batch_obj is not None:
                    batch_obj["records"] = records
            if batch_obj is not None:
                out.obj(file=path, kind="batch", **batch_obj)
            valid_bytes += info.size
        if pairs:
            findings.non_consecutive[os.path.abspath(path)] = pairs
        trailing = end - valid_bytes
        if trailing > 0 and opts.max_bytes == INT_MAX:
            out.line(f"Found {trailing} invalid bytes at the end of {name}")
            out.obj(file=path, kind="trailing_bytes", bytes=trailing)
    finally:
        source.close()


def _first_batch(source: Source, base: int, start: int, end: int) -> BatchInfo | None:
    for _, info, _ in _batches(source, base, start, end):
        return info
    return None


def dump_index(path: str, opts: Options, out: Output, findings: Findings) -> None:
    base = _base_of(os.path.basename(path))
    log = _open(_sibling(path, LOG))
    try:
        data = _read_all(path)
        slots = offset_slots(data)
        if not len(slots):
            out.line(f"{path} is empty.")
            out.obj(file=path, kind="index", entries=0)
            return
        if opts.sanity_only:
            check_offset_index(data, base, os.path.abspath(path))
            out.line(f"{path} passed sanity check.")
            out.obj(file=path, kind="index", sanity_check="passed")
            return
        mismatches = findings.index_mismatches.get(os.path.abspath(path), [])
        for rel, position in slots[: kafka_entries(slots["relative_offset"])].tolist():
            offset = base + rel
            if position > log.size or position < 0:
                raise DumpError(f"{path}: entry for offset {offset} points at byte {position}, past the end of "
                                f"the {log.size}-byte log")
            info = _first_batch(log, base, position, min(log.size, position + opts.max_message_size))
            if info is None:
                raise DumpError(f"{path}: no complete batch at byte {position} of the log (entry for offset {offset})")
            if info.last_offset != offset:
                mismatches.insert(0, (offset, info.last_offset))
            if not opts.verify_only:
                out.line(f"offset: {offset} position: {position}")
                out.obj(file=path, kind="index_entry", offset=offset, position=position,
                        batch_last_offset=info.last_offset)
        if mismatches:
            findings.index_mismatches[os.path.abspath(path)] = mismatches
    finally:
        log.close()


def dump_time_index(path: str, opts: Options, out: Output, findings: Findings) -> None:
    base = _base_of(os.path.basename(path))
    log = _open(_sibling(path, LOG))
    try:
        index = offset_index(_read_all(_sibling(path, INDEX)), base, log.size)
        data = _read_all(path)
        if opts.sanity_only:
            check_time_index(data, base, os.path.abspath(path))
            out.line(f"{path} passed sanity check.")
            out.obj(file=path, kind="timeindex", sanity_check="passed")
            return
        key = os.path.abspath(path)
        slots = time_slots(data)
        previous = -1
        for timestamp, rel in slots[: kafka_entries(slots["relative_offset"])].tolist():
            offset = base + rel
            _, position = index.lookup(offset)
            found = _time_entry_batch(log, base, position, offset)
            if found is None:
                findings.ts_not_found.setdefault(key, []).append((offset, -1))
            elif found[0].last_offset != offset:
                findings.ts_not_found.setdefault(key, []).append((offset, found[0].last_offset))
            else:
                if found[1] != timestamp:
                    findings.ts_mismatches.setdefault(key, []).append((timestamp, found[1]))
                if previous >= timestamp:
                    findings.ts_out_of_order.setdefault(key, []).append((timestamp, previous))
            if not opts.verify_only:
                out.line(f"timestamp: {timestamp} offset: {offset}")
                out.obj(file=path, kind="timeindex_entry", timestamp=timestamp, offset=offset)
            previous = timestamp
    finally:
        log.close()


def _time_entry_batch(log: Source, base: int, position: int, offset: int) -> tuple[BatchInfo, int] | None:
    """The first batch from `position` reaching `offset`, and the largest record timestamp in it."""
    for buf, info, _ in _batches(log, base, position, log.size):
        if info.last_offset >= offset:
            return info, max((d.record.timestamp for d in deep_records(buf, info)), default=-1)
    return None


def dump_txn_index(path: str, opts: Options, out: Output, findings: Findings) -> None:
    _base_of(os.path.basename(path))
    storage, inner = resolve(path)
    data = _read_all(path) if storage.exists(inner) else b""
    for e in read_txn_index(data, os.path.abspath(path)):
        out.line(f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                 f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}")
        out.obj(file=path, kind="aborted_txn", version=e.version, producer_id=e.producer_id,
                first_offset=e.first_offset, last_offset=e.last_offset, last_stable_offset=e.last_stable_offset)


def dump_snapshot(path: str, opts: Options, out: Output, findings: Findings, err: Callable[[str], None]) -> None:
    try:
        entries = read_snapshot(_read_all(path))
    except SnapshotCorruptError as exc:
        err(str(exc))
        out.obj(file=path, kind="error", message=str(exc))
        return
    for e in entries:
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
                f"{e.coordinator_epoch} currentTxnFirstOffset: {optional_long(e.current_txn_first_offset)} "
                f"lastTimestamp: {e.timestamp} ")
        fields: dict[str, Any] = {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                                  "coordinator_epoch": e.coordinator_epoch,
                                  "current_txn_first_offset": e.current_txn_first_offset,
                                  "last_timestamp": e.timestamp}
        if e.last_offset >= 0:
            line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: "
                     f"{e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
            fields.update(first_sequence=e.first_sequence, last_sequence=e.last_sequence, last_offset=e.last_offset,
                          offset_delta=e.offset_delta)
        out.line(line)
        out.obj(file=path, kind="producer", **fields)


def summaries(findings: Findings) -> list[str]:
    """The stderr report DumpLogSegments prints after the last file."""
    lines = []
    for path, pairs in findings.index_mismatches.items():
        lines.append(f"Mismatches in :{path}")
        lines += [f"  Index offset: {a}, log offset: {b}" for a, b in pairs]
    for path, pairs in findings.ts_mismatches.items():
        lines.append(f"Found timestamp mismatch in :{path}")
        lines += [f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs]
    for path, pairs in findings.ts_out_of_order.items():
        lines.append(f"Found out of order timestamp in :{path}")
        lines += [f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs]
    for pairs in findings.ts_not_found.values():
        lines.append("The following indexed offsets are not found in the log.")
        lines += [f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs]
    for path, pairs in findings.non_consecutive.items():
        lines.append(f"Non-consecutive offsets in {path}")
        lines += [f"  {a} is followed by {b}" for a, b in pairs]
    return lines


def dump(paths: list[str], opts: Options, stdout: IO[bytes], stderr: IO[str]) -> int:
    """Dump `paths` in order; 0 when all were read (mismatches are findings, not failures), else 1."""
    out = Output(stdout, opts.json)
    findings = Findings()

    def err(text: str) -> None:
        out.flush()
        print(text, file=stderr, flush=True)

    handlers = {".log": dump_log, ".checkpoint": dump_log, ".index": dump_index, ".timeindex": dump_time_index,
                ".txnindex": dump_txn_index}
    try:
        for arg in paths:
            path = _java_path(arg)
            out.line(f"Dumping {path}")
            name = os.path.basename(path)
            if "." not in name:
                raise DumpError(f"{path}: a file name without an extension is not a Kafka log file")
            suffix = name[name.rindex(".") :]
            if suffix == ".snapshot":
                dump_snapshot(path, opts, out, findings, err)
            elif suffix in handlers:
                handlers[suffix](path, opts, out, findings)
            else:
                err(f"Ignoring unknown file {path}")
                out.obj(file=path, kind="ignored")
    except (KafkaSparkError, OSError, struct.error) as exc:
        message = str(exc) if not isinstance(exc, IndexCorruptError) else f"index sanity check failed: {exc}"
        err(f"kafka-spark dump-log: error: {message}")
        return 1
    out.flush()
    if not opts.json:
        for line in summaries(findings):
            print(line, file=stderr)
    else:
        for name in ("index_mismatches", "ts_mismatches", "ts_out_of_order", "ts_not_found", "non_consecutive"):
            for path, pairs in getattr(findings, name).items():
                out.obj(file=path, kind=name, pairs=pairs)
        out.flush()
    return 0


def run(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.files:
        paths += [p for p in args.files.split(",") if p]
    if not paths:
        print("kafka-spark dump-log: error: give at least one FILE (or --files)", file=sys.stderr)
        return 1
    opts = Options(
        print_data=args.print_data_log, deep=args.deep_iteration or args.print_data_log,
        skip_metadata=args.skip_record_metadata, verify_only=args.verify_index_only,
        sanity_only=args.index_sanity_check, max_message_size=args.max_message_size, max_bytes=args.max_bytes,
        json=args.json,
    )
    return dump(paths, opts, sys.stdout.buffer, sys.stderr)

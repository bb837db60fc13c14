"""`kafka-spark dump-log` on files built here: formats, JSON, and one-line errors for bad files."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from seglog import PartitionBuilder

from kafka_spark.cli.main import main
from kafka_spark.records.crc import crc32c
from kafka_spark.segments import segment_file_name


@pytest.fixture
def part(tmp_path: Path) -> Path:
    b = PartitionBuilder(tmp_path / "t-0")
    b.batch(2)
    b.batch(3, producer_id=4, transactional=True)
    b.end_txn(4, commit=False)
    b.batch(1, gap=2)
    b.write(preallocate_indexes=3)
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 4, 0, 2, 5, 2, 123, 0, -1)
    (b.directory / segment_file_name(9, ".snapshot")).write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    return b.directory


def _run(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dump-log", *args])
    out, err = capfd.readouterr()
    return code, out, err


def test_text_dump(part: Path, capfd: pytest.CaptureFixture[str]) -> None:
    files = [str(part / segment_file_name(0, ext)) for ext in (".log", ".index", ".timeindex", ".txnindex")]
    files.append(str(part / segment_file_name(9, ".snapshot")))
    code, out, err = _run(capfd, *files, "--print-data-log")
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {files[0]}", "Log starting offset: 0"]
    assert lines[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 ")
    assert lines[3] == ("| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 7 sequence: -1 headerKeys: []"
                        " payload: value-0")
    assert "| offset: 5 CreateTime: 1700000000050 keySize: 4 valueSize: 6 sequence: -1 headerKeys: []" \
           " endTxnMarker: ABORT coordinatorEpoch: 0" in lines
    assert "version: 0 producerId: 4 firstOffset: 2 lastOffset: 5 lastStableOffset: 2" in lines
    assert ("producerId: 4 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong.empty "
            "lastTimestamp: 123 firstSequence: 0 lastSequence: 2 lastOffset: 5 offsetDelta: 2 timestamp: 123") in lines
    assert err.splitlines() == [f"Non-consecutive offsets in {files[0]}", "  5 is followed by 8"]


def test_skip_metadata_quirks(part: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capfd, str(part / segment_file_name(0, ".log")), "--print-data-log",
                        "--skip-record-metadata")
    assert code == 0
    assert " payload: value-0" in out.splitlines()  # no key: no "|" either, as in Kafka's tool
    assert "| key: k1 payload: value-1value-1" in out.splitlines()
    assert "" in out.splitlines()  # the control record's line is empty


def test_json_lines(part: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capfd, str(part / segment_file_name(0, ".log")), "--json", "--print-data-log")
    assert code == 0
    objs = [json.loads(line) for line in out.splitlines()]
    batches = [o for o in objs if o["kind"] == "batch"]
    assert [b["base_offset"] for b in batches] == [0, 2, 5, 8]
    assert batches[2]["records"][0]["control_type"] == "ABORT"
    assert any(o["kind"] == "non_consecutive" for o in objs)


def test_bad_files_give_one_line_and_exit_1(part: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = part / segment_file_name(0, ".log")
    cases = {
        str(tmp_path / "missing" / segment_file_name(0, ".log")): "no such file",
        str(tmp_path / "noext"): "without an extension",
    }
    (tmp_path / "noext").write_bytes(b"")
    zeros = tmp_path / "z-0" / segment_file_name(0, ".log")
    zeros.parent.mkdir()
    zeros.write_bytes(log.read_bytes() + b"\0" * 64)
    cases[str(zeros)] = "below the 14-byte minimum"
    for path, why in cases.items():
        code, out, err = _run(capfd, path)
        assert code == 1 and len(err.splitlines()) == 1 and why in err, err
        assert "Traceback" not in err and out.startswith(f"Dumping {path}")
    code, out, err = _run(capfd, str(tmp_path / "x.log.deleted"))
    assert code == 0 and err == f"Ignoring unknown file {tmp_path / 'x.log.deleted'}\n"


def test_truncated_log_reports_invalid_bytes(part: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    data = (part / segment_file_name(0, ".log")).read_bytes()
    cut = tmp_path / segment_file_name(0, ".log")
    cut.write_bytes(data[:-10])
    code, out, _ = _run(capfd, str(cut))
    assert code == 0 and out.splitlines()[-1].startswith("Found ") and out.endswith(f"end of {cut.name}\n")

"""`dump-log` on what KRaft writes: the metadata log, snapshot `.checkpoint` files and their control
records (leader changes, snapshot header and footer, kraft version, voters), and payloads that are
not UTF-8 — each equal to Kafka's DumpLogSegments on the same files."""

from __future__ import annotations

import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from dump_compare import OPTION_SETS, assert_same_dump, dump_files

from kafka_spark.cli.java_text import java_utf8
from kafka_spark.local.kafka import KafkaNode
from kafka_spark.protocol.control import encode_kraft_control
from kafka_spark.records import ControlType, encode_batch, encode_control_batch
from kafka_spark.segments import segment_file_name

FLAGS = ("deep", "data", "data-skip-metadata")
# Byte strings on which Python's and Java's UTF-8 replacement differ, and some on which they agree.
NOT_UTF8 = [b"\xed\xa0\x80x", b"\xf0\x9f", b"\xe0\x80\xaf", b"\xc0\xaf\xff", b"\xf4\x90\x80\x80", b"ok \xe2\x82",
            b"\xf0\x9f\x98\x80 fine", b"\xed\xbf\xbf\xed\xa0\x80"]


def test_the_metadata_log_and_bootstrap_checkpoint(kafka: KafkaNode, tmp_path: Path) -> None:
    meta = Path(shutil.copytree(kafka.log_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0"))
    files = [*dump_files(meta), *sorted(meta.glob("*.checkpoint"))]
    bootstrap = kafka.log_dir / "bootstrap.checkpoint"
    if bootstrap.exists():
        files.append(Path(shutil.copy(bootstrap, tmp_path / "bootstrap.checkpoint")))
    for flags in FLAGS:
        out = assert_same_dump(kafka.tools, files, OPTION_SETS[flags])
        if flags == "deep":
            assert "LeaderChange: {" in out


def _voters() -> dict:
    return {"version": 0, "voters": [
        {"voter_id": 1, "voter_directory_id": uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321),
         "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093},
                       {"name": "CTRL \"quoted\" é", "host": "host\x01\n\x1b", "port": 65535}],
         "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}},
        {"voter_id": 2, "voter_directory_id": uuid.UUID(int=0), "endpoints": [],
         "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 0}},
    ]}


def _kraft_batches() -> bytes:
    values = [
        (ControlType.SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp": 1_700_000_000_123}),
        (ControlType.KRAFT_VERSION, {"version": 0, "k_raft_version": 1}),
        (ControlType.KRAFT_VOTERS, _voters()),
        (ControlType.LEADER_CHANGE, {"version": 0, "leader_id": 2, "voters": [{"voter_id": 1}, {"voter_id": 2}],
                                     "granting_voters": [{"voter_id": 2}]}),
    ]
    out = bytearray()
    offset = 0
    for kind, value in values:
        out += encode_control_batch(kind, base_offset=offset, producer_id=-1, producer_epoch=-1,
                                    timestamp=1_700_000_000_000 + offset, value=encode_kraft_control(kind, value))
        offset += 1
    records = [(f"k{i}".encode(), raw, (), 1_700_000_000_000) for i, raw in enumerate(NOT_UTF8)]
    out += encode_batch(records, base_offset=offset)
    offset += len(records)
    out += encode_control_batch(ControlType.SNAPSHOT_FOOTER, base_offset=offset, producer_id=-1, producer_epoch=-1,
                                timestamp=1_700_000_000_000, value=encode_kraft_control(4, {"version": 0}))
    return bytes(out)


def test_kraft_control_records_and_snapshot_files(kafka: KafkaNode, tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    data = _kraft_batches()
    log = part / segment_file_name(0, ".log")
    log.write_bytes(data)
    snapshot = part / "00000000000000000042-0000000003.checkpoint"
    snapshot.write_bytes(data)
    for flags in FLAGS:
        out = assert_same_dump(kafka.tools, [log, snapshot], OPTION_SETS[flags])
        if flags == "deep":
            for label in ("SnapshotHeader {", "KRaftVersion {", "KRaftVoters {", "LeaderChange: {", "SnapshotFooter {"):
                assert out.count(label) == 2, label
            assert "Snapshot end offset: 42, epoch: 3" in out


@pytest.fixture(scope="module")
def decode_lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("decode-lines")
    subprocess.run(["javac", "--release", "17", "-d", str(out), str(Path(__file__).with_name("DecodeLines.java"))],
                   check=True, capture_output=True)
    return out


def test_bytes_become_text_as_javas_decoder_makes_it(decode_lines: Path) -> None:
    rng = random.Random(7)
    # Bytes around every boundary the UTF-8 rules draw, and some random ones.
    edges = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED,
             0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFE, 0xFF]
    cases = [bytes(rng.choice(edges) if rng.random() < 0.8 else rng.randrange(256) for _ in range(rng.randint(1, 8)))
             for _ in range(20_000)] + NOT_UTF8
    proc = subprocess.run(["java", "-cp", str(decode_lines), "DecodeLines"], capture_output=True, text=True,
                          input="".join(c.hex() + "\n" for c in cases), check=True, timeout=120)
    java = proc.stdout.split("\n")[: len(cases)]
    differ = []
    for raw, expected in zip(cases, java, strict=True):
        units = java_utf8(raw).encode("utf-16-be")
        got = " ".join(format(int.from_bytes(units[i:i + 2], "big"), "x") for i in range(0, len(units), 2))
        if got != expected:
            differ.append((raw.hex(), got, expected))
    assert not differ, differ[:10]
    # The cases are worth having: Python's own replacement differs from Java's on some of them.
    assert any(raw.decode("utf-8", "replace") != java_utf8(raw) for raw in cases)

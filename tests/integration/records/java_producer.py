"""Compile and run ProduceRecords.java (Kafka's own Java producer) and read back what it sent."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.fetch import classpath

from kafka_spark.client import KafkaClient, TopicPartition
from kafka_spark.local.process import java_argv

SOURCE = Path(__file__).with_name("ProduceRecords.java")
MAIN = "ProduceRecords"

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create and fill: the producer's compression.type and the topic's configs."""

    name: str
    codec: str
    configs: Mapping[str, str] = field(default_factory=dict)

    def argument(self) -> str:
        return ":".join([self.name, self.codec, *(f"{k}={v}" for k, v in self.configs.items())])


@dataclass(frozen=True)
class SentRecord:
    """One record as the producer sent it, with the offset and timestamp the broker acknowledged.

    `outcome` is "none" outside transactions, else "commit" or "abort".
    """

    topic: str
    offset: int
    timestamp: int
    outcome: str
    key: bytes | None
    value: bytes | None
    headers: Headers


def compile_producer(out_dir: Path) -> Path:
    """Compile ProduceRecords.java against the Kafka 4 client into `out_dir`; return it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # The source holds non-ASCII literals: never let the platform's default charset read it.
    argv = ["javac", "-encoding", "UTF-8", "--release", "17", "-cp", classpath("kafka4"), "-d", str(out_dir),
            str(SOURCE)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"javac failed (exit {proc.returncode}):\n{proc.stderr}")
    return out_dir


def produce(classes: Path, artifact_set: str, bootstrap: str, scenario: str, topics: Sequence[TopicSpec],
            work: Path) -> list[SentRecord]:
    """Run ProduceRecords with the client jars of `artifact_set`; return every acknowledged record."""
    output = work / f"sent-{scenario}.tsv"
    cp = f"{classes}{os.pathsep}{classpath(artifact_set)}"
    args = [str(output), bootstrap, scenario, *(t.argument() for t in topics)]
    proc = subprocess.run(java_argv(cp, MAIN, args, heap="256m", short_lived=True), capture_output=True, text=True,
                          timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"ProduceRecords failed (exit {proc.returncode}):\n{proc.stderr[-5000:]}")
    sent = parse_sent(output.read_text(encoding="utf-8"))
    opened: dict[str, int] = {}
    for s in sent:
        if s.outcome == "open":
            opened[s.topic] = min(s.offset, opened.get(s.topic, s.offset))
    wait_markers_written(bootstrap, [t.name for t in topics], opened)
    return sent


def wait_markers_written(bootstrap: str, topics: Sequence[str], opened: Mapping[str, int],
                         timeout: float = 60) -> None:
    """Wait until every ended transaction's marker is in the log: each partition 0's LSO is the first
    offset of the transaction `opened` leaves open in its topic, or else its high watermark.

    A producer's commit or abort returns once the coordinator has decided; the end markers reach the
    partitions afterwards, so files read straight after the producer exits can lack the last ones.
    """
    deadline = time.monotonic() + timeout
    tps = [TopicPartition(t, 0) for t in topics]
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        while True:
            stable = client.latest_offsets(tps, "read_committed")
            high = client.latest_offsets(tps, "read_uncommitted")
            want = {tp: opened.get(tp.topic, high[tp]) for tp in tps}
            if stable == want:
                return
            assert time.monotonic() < deadline, f"transactions still open after {timeout}s: {stable} vs {want}"
            time.sleep(0.2)


def _hex(text: str) -> bytes | None:
    return None if text == "-" else bytes.fromhex(text)


def _headers(text: str) -> Headers:
    pairs = []
    for item in text.split(",") if text else ():
        key, value = item.split("=")
        raw_key = _hex(key)
        assert raw_key is not None
        pairs.append((raw_key.decode("utf-8"), _hex(value)))
    return tuple(pairs)


def parse_sent(text: str) -> list[SentRecord]:
    """The records of ProduceRecords' output file (see the Java source for the line format)."""
    sent = []
    for line in text.splitlines():
        topic, offset, timestamp, outcome, key, value, headers = line.split("\t")
        sent.append(SentRecord(topic, int(offset), int(timestamp), outcome, _hex(key), _hex(value), _headers(headers)))
    return sent

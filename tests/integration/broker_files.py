"""Topics whose files a broker has written in every shape a reader of log dirs must handle, and copies
of log dirs (shared by the segment-file and pykafka-log proofs)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from kafka_spark.client.producer.producer import Producer
from kafka_spark.errors import DataLossError
from kafka_spark.local.topics import CreatesTopics
from kafka_spark.segments import PartitionLog

# Segments roll every 100 ms (an aborted transaction then spans two) and every batch is indexed.
ROLLING = {"segment.ms": "100", "index.interval.bytes": "1", "flush.messages": "1"}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
             "delete.retention.ms": "100", **ROLLING}
# Files at the root of a log dir that hold per-partition offsets (log start, high watermark, ...).
CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
               "cleaner-offset-checkpoint", "meta.properties")


def fill_compacted(broker: CreatesTopics, topic: str) -> None:
    """Create `topic` compacted and write 4 rounds of 8 keys (headers, a tombstone per round) to partition 0."""
    broker.create_topic(topic, configs=COMPACTED)
    with Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0}) as producer:
        for round_ in range(4):
            futures = [producer.send(topic, f"v{round_}-{k}".encode(), key=f"k{k}".encode(), partition=0,
                                     headers=[("round", str(round_).encode())]) for k in range(8)]
            futures.append(producer.send(topic, None, key=b"k0", partition=0))  # a tombstone
            for f in futures:
                f.get(30)
            time.sleep(0.15)


def is_compacted(log_dir: Path, topic: str) -> bool:
    """Whether the cleaner has removed records from partition 0 of `topic`."""
    try:
        with PartitionLog.open(str(log_dir / f"{topic}-0")) as log:
            offsets = [o for b in log.read() for o in b.column("offset").to_pylist()]
    except DataLossError:  # the cleaner swapped segments under the reader: look again
        return False
    return len(offsets) < log.log_end_offset - log.log_start_offset


def wait_compacted(log_dir: Path, topic: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not is_compacted(log_dir, topic):
        assert time.monotonic() < deadline, f"the log cleaner did not compact {topic} within {timeout:.0f} s"
        time.sleep(0.5)


# Files the log cleaner writes and renames while it swaps segments: a copy holding one is mid-swap.
# (`.deleted` files are the swapped-out segments, kept a minute before removal; no reader opens them.)
CLEANER_TEMPORARY = (".cleaned", ".swap")


def copy_partition_dir(src: Path, dest: Path, attempts: int = 50) -> Path:
    """Copy one live partition directory as a consistent set of files.

    The log cleaner may rename or delete files while they are copied (a vanished `.cleaned` file,
    a half-swapped segment), so a copy that met either is thrown away and taken again.
    """
    for _ in range(attempts):
        shutil.rmtree(dest, ignore_errors=True)
        try:
            shutil.copytree(src, dest)
        except shutil.Error:
            time.sleep(0.2)
            continue
        if not any(p.name.endswith(CLEANER_TEMPORARY) for p in dest.iterdir()):
            return dest
        time.sleep(0.2)
    raise AssertionError(f"{src} kept changing under {attempts} copies (the log cleaner never settled)")


def copy_log_dir(log_dir: Path, topics: Iterable[str], dest: Path) -> Path:
    """Copy the partition dirs of `topics` and the checkpoint files of `log_dir` to `dest`; returns `dest`."""
    wanted = set(topics)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in log_dir.iterdir():
        if entry.is_dir() and entry.name.rpartition("-")[0] in wanted:
            copy_partition_dir(entry, dest / entry.name)
        elif entry.name in CHECKPOINTS:
            shutil.copy2(entry, dest / entry.name)
    return dest

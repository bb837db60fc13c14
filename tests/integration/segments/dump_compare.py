"""Run Kafka's DumpLogSegments and `kafka-spark dump-log` on the same files and compare them.

Both read a copy of the partition directories, so a broker that keeps writing cannot make them
see different bytes. Kafka prints its stderr summaries in hash order between files, so those are
compared as blocks, each block in the tool's own order.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from broker_files import copy_partition_dir

from kafka_spark.cli.dump_log_cmd import Options, dump
from kafka_spark.local.tools import KafkaTools

OPTION_SETS: dict[str, list[str]] = {
    "shallow": [],
    "deep": ["--deep-iteration"],
    "data": ["--print-data-log"],
    "data-skip-metadata": ["--print-data-log", "--skip-record-metadata"],
    "deep-skip-metadata": ["--deep-iteration", "--skip-record-metadata"],
    "verify-index-only": ["--verify-index-only"],
}
# Files of a partition directory both tools dump (the others are "Ignoring unknown file").
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def copy_partitions(log_dir: Path, topics: Sequence[str], dest: Path) -> dict[str, Path]:
    """Copy partition 0 of each topic out of a live log dir; topic -> copied directory."""
    out = {}
    for topic in topics:
        src = log_dir / f"{topic}-0"
        out[topic] = copy_partition_dir(src, dest / src.name)
    return out


def dump_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES)


def ours(files: Sequence[Path], flags: Sequence[str]) -> tuple[int, str, str]:
    opts = Options(print_data="--print-data-log" in flags,
                   deep="--deep-iteration" in flags or "--print-data-log" in flags,
                   skip_metadata="--skip-record-metadata" in flags, verify_only="--verify-index-only" in flags,
                   sanity_only="--index-sanity-check" in flags)
    out, err = io.BytesIO(), io.StringIO()
    code = dump([str(f) for f in files], opts, out, err)
    return code, out.getvalue().decode("utf-8"), err.getvalue()


def kafkas(tools: KafkaTools, files: Sequence[Path], flags: Sequence[str]) -> tuple[int, str, str]:
    proc = tools.run("dump-log", "--files", ",".join(str(f) for f in files), *flags, bootstrap=False, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def stderr_blocks(text: str) -> list[tuple[str, ...]]:
    """Summary blocks (a heading and the lines under it), sorted; Java logging lines left out."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(("  ", "Indexed offset: ")) and blocks:
            blocks[-1].append(line)
        elif line.startswith(("Mismatches in :", "Found ", "The following", "Non-consecutive", "Ignoring",
                              "Snapshot")):
            blocks.append([line])
    return sorted(tuple(b) for b in blocks)


def assert_same_dump(tools: KafkaTools, files: Sequence[Path], flags: Sequence[str]) -> str:
    """Our dump equals Kafka's, stdout line for line and the stderr summaries; returns the stdout."""
    code, out, err = ours(files, flags)
    kcode, kout, kerr = kafkas(tools, files, flags)
    assert kcode == 0, kerr[-2000:]
    assert code == 0, err
    assert out.splitlines() == kout.splitlines()
    assert out.endswith("\n") == kout.endswith("\n")
    assert stderr_blocks(err) == stderr_blocks(kerr)
    return out

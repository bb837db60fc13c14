"""The driver JVM of a local session maps Spark's class archive, and starts without it when it is damaged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_spark.local.archive_build import build_archive

SESSION = """
import sys
from kafka_spark.local.spark import JAVA_OPTIONS, local_spark_configs
from kafka_spark.local.spark import local_spark
archive, log = sys.argv[1:3]
options = local_spark_configs(jars=False)[JAVA_OPTIONS].replace(str({built!r}), archive)
spark = local_spark("archive-test", extra={{JAVA_OPTIONS: options + f" -Xlog:cds=info,cds+dynamic=info:file={{log}}"}})
print(spark.range(10).count())
spark.stop()
"""


@pytest.fixture(scope="module")
def archive() -> Path:
    built = build_archive()
    assert built is not None, "this JDK builds dynamic CDS archives (JDK 13+)"
    return built


def session_log(archive: Path, use: Path, log: Path) -> str:
    code = SESSION.format(built=str(archive))
    out = subprocess.run([sys.executable, "-c", code, str(use), str(log)], capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "10"
    assert "cds" not in out.stderr.lower()  # the JVM's CDS messages stay out of the driver's output
    return log.read_text()


def test_a_local_session_maps_the_archive(archive: Path, tmp_path: Path) -> None:
    assert "Mapped dynamic region" in session_log(archive, archive, tmp_path / "cds.log")


def test_a_damaged_archive_is_skipped_and_the_session_starts(archive: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.jsa"
    data = bytearray(archive.read_bytes())
    for at in (100, len(data) // 2):
        data[at:at + 64] = bytes(64)
    damaged.write_bytes(bytes(data))
    log = session_log(archive, damaged, tmp_path / "cds.log")
    assert "Mapped static" in log and "Mapped dynamic region" not in log

"""Building the wheel as docs/install.md says, from a copy of the sources, and running commands for it."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WHEEL = "dist/kafka_spark-0.1.0-py3-none-any.whl"
# The commands of docs/install.md ("Installing into an existing Spark environment"), run as written: the first in
# a copy of this repository, the others with `python` being the target environment's interpreter.
BUILD = "python -m pip wheel --no-deps -w dist ."
DRY_RUN = f"python -m pip install --dry-run --report pip-report.json {WHEEL}"
INSTALL = f"python -m pip install {WHEEL}"


def run(argv: list[str], timeout: float = 900, **kwargs) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    assert proc.returncode == 0, f"{argv}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


def command(line: str, python: str) -> list[str]:
    argv = shlex.split(line)
    return [python, *argv[1:]] if argv[0] == "python" else argv


def source_copy(dest: Path) -> Path:
    """What the wheel is built from, copied so the build leaves the work tree alone."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md", "pyspark_kafka_spark.py", "pyspark_kafka_spark_log.py"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "kafka_spark", dest / "kafka_spark", ignore=ignore)
    return dest

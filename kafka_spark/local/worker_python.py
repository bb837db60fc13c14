"""The interpreter local sessions give Spark for its Python workers: this one, minus Spark's zipped PySpark.

Spark starts every Python process with `$SPARK_HOME/python/lib/pyspark.zip` first on PYTHONPATH. A zip
holds no compiled bytecode, so each new process compiles PySpark's modules again: 0.4-0.5 s before a
stream's source process (one per query, started fresh) answers its first call, on every query start.
When that zip is the one inside the installed `pyspark` package, it is the same code as the package:
the launcher drops it from PYTHONPATH, and the process imports the installed, compiled copy instead.
Any other PYTHONPATH entry, and a zip of another Spark (a SPARK_HOME elsewhere), are left alone. A stream's
source process is forked by the session's runner zygote instead, when it runs (runner_zygote.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

_SCRIPT = """#!/bin/sh
# Written by kafka_spark.local.worker_python: runs {python} with PYSPARK_ZIP left out of PYTHONPATH.
PYSPARK_ZIP={zip}
kept=
set -f
IFS=:
for entry in $PYTHONPATH; do
  [ "$entry" = "$PYSPARK_ZIP" ] || kept=${{kept:+$kept:}}$entry
done
unset IFS
set +f
if [ -n "$kept" ]; then export PYTHONPATH="$kept"; else unset PYTHONPATH; fi
if [ "$1" = "-m" ] && [ "$2" = "{runner}" ] && [ -S "${{KAFKA_SPARK_RUNNER_ZYGOTE:-}}" ]; then
  exec {python} -S -E {client} "$KAFKA_SPARK_RUNNER_ZYGOTE" "$0" "$@"
fi
exec {python} "$@"
"""


def installed_pyspark_zip() -> Path | None:
    """The `pyspark.zip` shipped inside the installed pyspark package, if it is installed as files."""
    try:
        import pyspark
    except ImportError:
        return None
    zipped = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"
    return zipped if zipped.is_file() else None


def launcher_text(python: str, zipped: Path) -> str:
    """The shell launcher that runs `python` without `zipped` on PYTHONPATH."""
    from kafka_spark.local import runner_client
    from kafka_spark.local.runner_zygote import RUNNER

    return _SCRIPT.format(python=shlex.quote(python), zip=shlex.quote(str(zipped)), runner=RUNNER,
                          client=shlex.quote(str(Path(runner_client.__file__).resolve())))


@functools.cache
def worker_python(directory: str | None = None) -> str:
    """A launcher for this interpreter that imports the installed PySpark, or `sys.executable` when there is
    no such zip, its folder is writable by others, or the launcher cannot run here (a temp dir mounted noexec)."""
    zipped = installed_pyspark_zip()
    if zipped is None:
        return sys.executable
    text = launcher_text(sys.executable, zipped)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(directory or tempfile.gettempdir()) / f"kafka-spark-{os.getuid()}"
    path = folder / f"python-{digest}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = folder.stat()
        if owner.st_uid != os.getuid() or owner.st_mode & 0o022:
            return sys.executable  # a shared temp dir where someone else could swap the launcher
        if not path.is_file() or path.read_text() != text:
            partial = path.with_name(f"{path.name}.{os.getpid()}")
            partial.write_text(text)
            partial.chmod(0o755)
            partial.replace(path)
        env = {**os.environ, "PYTHONPATH": str(zipped)}
        ran = subprocess.run([str(path), "-c", "import sys"], env=env, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return sys.executable
    return str(path) if ran.returncode == 0 else sys.executable


DAEMON_MODULE = "kafka_spark.local.pyspark_worker_daemon"


@functools.cache
def worker_daemon(python: str) -> str | None:
    """`DAEMON_MODULE` for `spark.python.daemon.module` when `python` finds it from here, as Spark's workers
    will (in local mode they start in this directory); None leaves PySpark's own daemon."""
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({DAEMON_MODULE!r}) else 3)"
    try:
        ran = subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return DAEMON_MODULE if ran.returncode == 0 else None


if __name__ == "__main__":
    # For sessions built elsewhere: PYSPARK_PYTHON=$(python -m kafka_spark.local.worker_python)
    print(worker_python())

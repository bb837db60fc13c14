"""A class-data-sharing archive of Spark's driver classes, so that local sessions start in 3 s, not 5.

A Spark driver JVM loads and verifies ~10,000 classes from Spark's jars before the session is up. A
dynamic CDS archive (JDK 13+) holds them pre-parsed: the JVM maps it instead. Measured on a 2-core
machine: a local session up in 3.3 s against 5.0, its first job 1.3 s against 2.3.

The first driver that finds no archive (a job's or a local session's, started with `-XX:ArchiveClassesAtExit`)
writes it as it exits, so that a job's first run pays nothing to build it; `python -m kafka_spark.local.archive_build`
(run by the tests' set-up, `.ci/setup --tests`) builds it ahead with a throwaway session. It is kept in the cache
under a name that changes with the Java binary, the PySpark version and Spark's jars. Local sessions pass
`-XX:SharedArchiveFile` when it exists; a JVM that cannot use it (another build, another class path)
runs as if it were not given, with its CDS messages off.

Archives are 20-180 MB each. Partial archives that lost the race to be moved into place, or whose JVM was killed
while writing them, are deleted once settled, and archives no JVM started from for `UNUSED_DAYS` (another Java,
other jars) when archives are built (`prune`): a JVM starting from one marks it used at most once a day.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_spark.local.jars import cache_dir

# Checked before use: an unchecked damaged archive crashed the JVM. The JVM's CDS warnings (an archive
# it cannot map) would land on the driver's stderr.
_CHECK_AND_SILENCE = "-XX:+VerifySharedSpaces -Xlog:cds=off -Xlog:cds+dynamic=off"
# The option that writes an archive; a JVM given it cannot start from one.
DUMP_OPTION = "-XX:ArchiveClassesAtExit"
# What a JVM logs (cds+dynamic, info) once it has written and closed the archive.
_WRITTEN = "Written dynamic archive"


def spark_java() -> Path | None:
    """The `java` Spark's launcher runs: `$JAVA_HOME/bin/java`, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home, "bin", "java")) if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def archive_path() -> Path | None:
    """Where the archive for this Java and this PySpark's jars lives (whether or not it exists)."""
    java = spark_java()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    stat = java.stat()
    key = "\n".join([str(java), str(stat.st_size), str(stat.st_mtime_ns), pyspark.__version__,
                     *sorted(p.name for p in jars.glob("*.jar"))])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def java_options() -> str | None:
    """Driver JVM options that use the archive, or None when there is none yet."""
    path = archive_path()
    if path is None or not (path.is_file() or _adopt_written(path)):
        return None
    _tidy_once(path)
    return f"-XX:SharedArchiveFile={path} {_CHECK_AND_SILENCE}"


def driver_options() -> str | None:
    """Driver JVM options that use the archive; with none yet, options that make this driver write one as it exits
    (the first job's or session's), which the next driver takes once its log says it is whole."""
    used = java_options()
    path, java = archive_path(), spark_java()
    if used is not None or path is None or java is None or not writes_archives(java):
        return used
    path.parent.mkdir(parents=True, exist_ok=True)
    for dead in _settled_partials(path, _SETTLED_SECONDS):  # not written whole: its JVM was killed
        _discard(dead)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    return f"{DUMP_OPTION}={partial} -Xlog:cds*=off -Xlog:cds+dynamic=info:file={_log_of(partial)}"


def writes_archives(java: Path) -> bool:
    """Whether this `java` (its real path) can write an archive: a JVM without the JDK's base archive refuses to start
    with the option that writes one."""
    return (java.parent.parent / "lib" / "server" / "classes.jsa").is_file()


def _log_of(partial: Path) -> Path:
    return partial.with_name(partial.name + ".log")


def _discard(partial: Path) -> None:
    partial.unlink(missing_ok=True)
    _log_of(partial).unlink(missing_ok=True)


def _adopt_written(path: Path) -> bool:
    """Move into place a partial archive that a driver wrote as it exited. The JVM logs this line once the file is
    written and closed; a driver killed while writing never does, and a damaged archive can crash the JVM that maps
    it, so no other partial is taken."""
    for partial in sorted(path.parent.glob(f"{path.name}.*.partial")):
        with contextlib.suppress(OSError):
            if _WRITTEN in _log_of(partial).read_text(errors="replace"):
                os.replace(partial, path)
                _log_of(partial).unlink(missing_ok=True)
                return True
    return False


# ---- the other JVMs: Kafka and ZooKeeper servers, Kafka's tools -----------------------------------------
# Each main class on its class path gets an archive of its own. A JVM that finds none writes one as it exits
# (a tool at once, a server when it is stopped), into a partial file; the next start of that main class checks
# the partial with a throwaway JVM (0.1 s: a truncated archive crashes even a checking JVM) and moves it into
# place. `write_server_archives` (run by the tests' set-up) makes the servers' ahead of the suite's many starts.
# Measured on a 2-core machine: a Kafka tool 0.75 -> 0.4 CPU seconds, a broker start 4.6 -> 3.3.

_SETTLED_SECONDS = 30.0  # a JVM writes its archive in ~2 s as it exits; an older partial is complete or dead
UNUSED_DAYS = 30
_DAY = 86_400.0
_tidied: set[Path] = set()  # archives whose leftover partials this process has deleted


def _java() -> str | None:
    found = shutil.which("java")
    return str(Path(found).resolve()) if found else None


def jvm_archive_path(classpath: str, main: str) -> Path | None:
    """Where the archive for `main` on `classpath` with this Java lives; None unless every class path entry
    is a folder of jars (`dir/*`), which the archive's key covers."""
    java = _java()
    entries = classpath.split(os.pathsep)
    if java is None or not all(entry.endswith("*") for entry in entries):
        return None
    stat = Path(java).stat()
    jars = sorted(f"{jar}:{jar.stat().st_size}" for entry in entries for jar in Path(entry.rstrip("*")).glob("*.jar"))
    key = "\n".join([java, str(stat.st_size), str(stat.st_mtime_ns), main, *jars])
    return cache_dir() / "jvm" / f"{main.rsplit('.', 1)[-1]}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _usable(java: str, archive: Path, classpath: str) -> bool:
    try:
        # a crash report of the checking JVM goes nowhere (-XX:ErrorFile), not into the current folder
        ran = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", "-Xshare:on", "-XX:+VerifySharedSpaces",
                              "-Xlog:cds*=off", f"-XX:ErrorFile={os.devnull}", "-cp", classpath, "-version"],
                             capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return ran.returncode == 0


def _adopt(path: Path, classpath: str, settled: float = _SETTLED_SECONDS) -> bool:
    """Move a settled, checked partial archive into place; drop the settled ones that fail the check."""
    java = _java()
    for partial in _settled_partials(path, settled):
        with contextlib.suppress(OSError):
            if java is not None and _usable(java, partial, classpath):
                os.replace(partial, path)
                return True
            partial.unlink()
    return False


def _settled_partials(path: Path, settled: float) -> list[Path]:
    """The partial archives for `path` last written at least `settled` seconds ago, in name order."""
    now = time.time()
    out = []
    for partial in sorted(path.parent.glob(f"{path.name}.*.partial")):
        with contextlib.suppress(OSError):
            if now - partial.stat().st_mtime >= settled:
                out.append(partial)
    return out


def _tidy_once(path: Path) -> None:
    if path not in _tidied:
        _tidied.add(path)
        _tidy(path)


def _tidy(path: Path, settled: float = _SETTLED_SECONDS) -> None:
    """With `path` in place: delete its settled partials (JVMs that started while there was none each wrote
    one), and mark it used today."""
    for partial in _settled_partials(path, settled):
        _discard(partial)
    with contextlib.suppress(OSError):
        if time.time() - path.stat().st_mtime > _DAY:
            os.utime(path)


def prune(days: float = UNUSED_DAYS) -> list[Path]:
    """Delete the archives (and partials) in the cache that no JVM has marked used for `days`; those deleted."""
    folder = cache_dir() / "jvm"
    cutoff = time.time() - days * _DAY
    gone = []
    for file in sorted(folder.glob("*.jsa*")) if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            if file.stat().st_mtime < cutoff:
                file.unlink()
                gone.append(file)
    return gone


def sharing_options(classpath: str, main: str) -> list[str]:
    """JVM options that start `main` from its archive; with no archive yet, options that write one as the JVM
    exits. Empty when there is no Java to key the archive on."""
    path = jvm_archive_path(classpath, main)
    if path is None:
        return []
    if path.is_file() or _adopt(path, classpath):
        _tidy_once(path)
        return [f"-XX:SharedArchiveFile={path}", *_CHECK_AND_SILENCE.split()]
    java = _java()
    if java is None or not writes_archives(Path(java)):
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    return [f"{DUMP_OPTION}={partial}", "-Xlog:cds*=off"]


def write_server_archives(mains: Sequence[tuple[str, str]], run: Callable[[Path], object]) -> list[Path]:
    """Archives of the server JVMs `mains` ((class path, main class) pairs), written by the servers that `run`
    starts and stops in a scratch folder, unless each has one already; the archives in place afterwards."""
    paths = [jvm_archive_path(cp, main) for cp, main in mains]
    if all(p is None or p.is_file() for p in paths):
        return [p for p in paths if p is not None]
    with tempfile.TemporaryDirectory(prefix="kafka-spark-archives-") as tmp:
        run(Path(tmp))
    for path, (cp, _) in zip(paths, mains, strict=True):
        if path is not None and not path.is_file():
            _adopt(path, cp, settled=0.0)
    return [p for p in paths if p is not None and p.is_file()]

"""Where local sessions keep Spark's class archive, and how its JVM options reach the driver."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyspark
import pytest

from kafka_spark.local import archive_build, class_archive
from kafka_spark.local.spark import JAVA_OPTIONS, merged_configs, submit_args


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAFKA_SPARK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def fake_java(root: Path, body: str) -> Path:
    java = root / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(body)
    return root


def test_the_archive_is_named_for_this_java_and_pyspark(cache: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = class_archive.archive_path()
    assert path is not None and path.parent == cache / "jvm"
    assert path.name.startswith(f"spark-{pyspark.__version__}-") and path.suffix == ".jsa"
    assert class_archive.archive_path() == path
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "jdk-a", "a")))
    other = class_archive.archive_path()
    assert other not in (None, path)
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "jdk-b", "bb")))
    assert class_archive.archive_path() not in (None, path, other)


def test_no_java_no_archive(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert class_archive.archive_path() is None
    assert class_archive.java_options() is None
    assert archive_build.build_archive() is None


def test_options_only_once_the_archive_exists(cache: Path) -> None:
    path = class_archive.archive_path()
    assert path is not None
    assert class_archive.java_options() is None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    options = class_archive.java_options()
    assert options is not None
    # a damaged archive is checked and skipped, never mapped (an unchecked one can crash the JVM)
    assert options.split()[:2] == [f"-XX:SharedArchiveFile={path}", "-XX:+VerifySharedSpaces"]


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="no java")
def test_the_first_driver_writes_the_archive_and_the_next_takes_it_once_written_whole(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(class_archive, "_tidied", set())
    path = class_archive.archive_path()
    java = class_archive.spark_java()
    assert path is not None and java is not None
    if not class_archive.writes_archives(java):
        pytest.skip("this JDK has no base archive")
    options = class_archive.driver_options()
    assert options is not None and class_archive.java_options() is None
    dump, log = options.split()[0], options.split()[-1]
    partial = Path(dump.split("=", 1)[1])
    assert dump.startswith(f"{class_archive.DUMP_OPTION}=") and partial.name.startswith(path.name)
    assert log == f"-Xlog:cds+dynamic=info:file={partial}.log"
    # the driver exits: its archive, then the line the JVM logs once it is written and closed
    partial.write_bytes(b"archive")
    assert class_archive.java_options() is None  # no such line yet: it may still be writing, or was killed
    Path(f"{partial}.log").write_text("[34.5s][info][cds,dynamic] Written dynamic archive 0x0800 - 0x0900\n")
    used = class_archive.driver_options()
    assert used is not None and used.startswith(f"-XX:SharedArchiveFile={path} ")
    assert path.read_bytes() == b"archive" and not partial.exists() and not Path(f"{partial}.log").exists()


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="no java")
def test_a_partial_archive_never_written_whole_goes_once_settled(cache: Path) -> None:
    path = class_archive.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    killed = path.with_name(f"{path.name}.1-00000001.partial")
    killed.write_bytes(b"half an archive")
    Path(f"{killed}.log").write_text("")
    old = time.time() - 120
    os.utime(killed, (old, old))
    options = class_archive.driver_options()
    assert options is not None and options.startswith(class_archive.DUMP_OPTION)
    assert not killed.exists() and not Path(f"{killed}.log").exists()


def test_callers_jvm_options_are_added_after_ours() -> None:
    conf = {JAVA_OPTIONS: "-XX:SharedArchiveFile=a.jsa", "spark.master": "local[2]"}
    merged = merged_configs(conf, {JAVA_OPTIONS: "-Dderby.system.home=/x -Xshare:off", "spark.master": "local[1]"})
    assert merged == {JAVA_OPTIONS: "-XX:SharedArchiveFile=a.jsa -Dderby.system.home=/x -Xshare:off",
                      "spark.master": "local[1]"}
    dumping = {JAVA_OPTIONS: "-XX:ArchiveClassesAtExit=b.jsa"}
    assert merged_configs(conf, dumping)[JAVA_OPTIONS] == "-XX:ArchiveClassesAtExit=b.jsa"
    assert merged_configs({}, dumping) == dumping
    assert merged_configs(conf, {}) == conf
    # a JVM told both to write an archive and to share none refuses to start: theirs win
    writing = {JAVA_OPTIONS: "-XX:ArchiveClassesAtExit=c.jsa -Xlog:cds*=off -Xlog:cds+dynamic=info:file=c.log "
                             "-XX:TieredStopAtLevel=1"}
    assert merged_configs(writing, {JAVA_OPTIONS: "-Xshare:off"})[JAVA_OPTIONS] == "-XX:TieredStopAtLevel=1 -Xshare:off"


def test_spark_submit_gets_one_driver_java_options(cache: Path) -> None:
    path = class_archive.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    args = submit_args()
    assert args.count("--driver-java-options") == 1
    java = args[args.index("--driver-java-options") + 1]
    assert "-Dlog4j2.configurationFile=" in java and f"-XX:SharedArchiveFile={path}" in java
    assert not any(a.startswith(f"{JAVA_OPTIONS}=") for a in args)


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="no java")
def test_java_is_the_one_spark_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert class_archive.spark_java() == Path(shutil.which("java") or "").resolve()


# ---- the Kafka and ZooKeeper JVMs --------------------------------------------------------------------------


def jar_folder(root: Path, *jars: tuple[str, bytes]) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in jars:
        (root / name).write_bytes(content)
    return f"{root}/*"


def test_a_jvm_archive_is_keyed_on_the_main_class_and_every_jar(cache: Path, tmp_path: Path) -> None:
    cp = jar_folder(tmp_path / "a", ("x.jar", b"1"), ("y.jar", b"22"))
    path = class_archive.jvm_archive_path(cp, "org.example.Tool")
    assert path is not None and path.parent == cache / "jvm" and path.name.startswith("Tool-")
    assert class_archive.jvm_archive_path(cp, "org.example.Tool") == path
    assert class_archive.jvm_archive_path(cp, "org.example.Other") != path
    (tmp_path / "a" / "y.jar").write_bytes(b"333")  # another build of a jar
    assert class_archive.jvm_archive_path(cp, "org.example.Tool") != path
    # a folder of classes is not covered by the key: no archive for it
    assert class_archive.jvm_archive_path(f"{tmp_path / 'classes'}{os.pathsep}{cp}", "org.example.Tool") is None


def test_a_jvm_without_an_archive_writes_one_and_the_next_uses_it(cache: Path, tmp_path: Path) -> None:
    cp = jar_folder(tmp_path / "a", ("x.jar", b"1"))
    (dump,) = [o for o in class_archive.sharing_options(cp, "org.example.Server")
               if o.startswith(class_archive.DUMP_OPTION)]
    partial = Path(dump.split("=", 1)[1])
    assert partial.parent == cache / "jvm" and partial.name.endswith(".partial") and not partial.exists()
    path = class_archive.jvm_archive_path(cp, "org.example.Server")
    assert path is not None
    path.write_bytes(b"archive")
    options = class_archive.sharing_options(cp, "org.example.Server")
    assert options[0] == f"-XX:SharedArchiveFile={path}" and "-XX:+VerifySharedSpaces" in options


def test_a_java_without_the_jdks_base_archive_writes_none(tmp_path: Path) -> None:
    # such a JVM refuses to start with the option that writes one
    java = tmp_path / "jdk" / "bin" / "java"
    assert not class_archive.writes_archives(java)
    (tmp_path / "jdk" / "lib" / "server").mkdir(parents=True)
    (tmp_path / "jdk" / "lib" / "server" / "classes.jsa").write_bytes(b"")
    assert class_archive.writes_archives(java)


def test_leftover_partials_go_once_the_archive_is_in_place_and_unused_archives_are_pruned(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(class_archive, "_tidied", set())
    cp = jar_folder(tmp_path / "a", ("x.jar", b"1"))
    path = class_archive.jvm_archive_path(cp, "org.example.Tool")
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"archive")
    old = time.time() - 3 * 86_400
    os.utime(path, (old, old))
    # Two JVMs that started before the archive was in place wrote partials; a third is still writing one.
    settled = [path.with_name(f"{path.name}.{n}-0000000{n}.partial") for n in (1, 2)]
    writing = path.with_name(f"{path.name}.3-00000003.partial")
    for partial in [*settled, writing]:
        partial.write_bytes(b"partial")
    for partial in settled:
        os.utime(partial, (old, old))
    options = class_archive.sharing_options(cp, "org.example.Tool")
    assert options[0] == f"-XX:SharedArchiveFile={path}"
    assert not any(p.exists() for p in settled) and writing.exists()
    assert time.time() - path.stat().st_mtime < 60  # marked used today
    # An archive of another Java or other jars that nothing has started from for 30 days goes at the next build.
    stale = cache / "jvm" / "Other-0123456789abcdef.jsa"
    stale.write_bytes(b"archive")
    month = time.time() - 31 * 86_400
    os.utime(stale, (month, month))
    assert class_archive.prune() == [stale]
    assert not stale.exists() and path.exists() and writing.exists()

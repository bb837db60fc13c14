"""Where local sessions keep Spark's class archive, and how its JVM options reach the driver."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyspark
import pytest

from kafka_spark.local import class_archive
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
    assert class_archive.build_archive() is None


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


def test_callers_jvm_options_are_added_after_ours() -> None:
    conf = {JAVA_OPTIONS: "-XX:SharedArchiveFile=a.jsa", "spark.master": "local[2]"}
    merged = merged_configs(conf, {JAVA_OPTIONS: "-Dderby.system.home=/x -Xshare:off", "spark.master": "local[1]"})
    assert merged == {JAVA_OPTIONS: "-XX:SharedArchiveFile=a.jsa -Dderby.system.home=/x -Xshare:off",
                      "spark.master": "local[1]"}
    dumping = {JAVA_OPTIONS: "-XX:ArchiveClassesAtExit=b.jsa"}
    assert merged_configs(conf, dumping)[JAVA_OPTIONS] == "-XX:ArchiveClassesAtExit=b.jsa"
    assert merged_configs({}, dumping) == dumping
    assert merged_configs(conf, {}) == conf


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


def test_tools_write_an_archive_servers_only_use_one(cache: Path, tmp_path: Path) -> None:
    cp = jar_folder(tmp_path / "a", ("x.jar", b"1"))
    assert class_archive.sharing_options(cp, "org.example.Server", write=False) == []
    (dump,) = [o for o in class_archive.sharing_options(cp, "org.example.Tool", write=True)
               if o.startswith(class_archive.DUMP_OPTION)]
    partial = Path(dump.split("=", 1)[1])
    assert partial.parent == cache / "jvm" and partial.name.endswith(".partial") and not partial.exists()
    path = class_archive.jvm_archive_path(cp, "org.example.Server")
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"archive")
    options = class_archive.sharing_options(cp, "org.example.Server", write=False)
    assert options[0] == f"-XX:SharedArchiveFile={path}" and "-XX:+VerifySharedSpaces" in options


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
    options = class_archive.sharing_options(cp, "org.example.Tool", write=True)
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

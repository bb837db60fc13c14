"""The installed package is the product: the wheel holds every module of `kafka_spark` and its data files, and
none of the tests' machinery (tests/harness: the fault proxy, the 3-node cluster, the S3 and standalone servers,
the KDC, the OAuth server and its broker, Kafka 3.9 and ZooKeeper, their poms and logging files), which no module of
the package imports; and every module in it is used by something other than the tests."""

from __future__ import annotations

import ast
import configparser
import sys
import zipfile
from pathlib import Path

from wheel_build import BUILD, REPO, WHEEL, command, run, source_copy
from wheel_imports import unused

from kafka_spark.local.jars import ARTIFACT_SETS

HARNESS = REPO / "tests" / "harness"
HARNESS_MODULES = {p.stem for p in HARNESS.glob("*.py")} - {"__init__"}
# The servers only the tests start, by the names they had in the package.
TEST_SERVERS = {"kdc", "kerberos_kafka", "oauth_server", "oauth_kafka", "kafka39", "zookeeper"}


def _entry_modules(wheel: zipfile.ZipFile) -> set[str]:
    """The modules of the wheel's console scripts."""
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(name).decode())
    return {target.split(":")[0].strip() for _, target in parser.items("console_scripts")}


def test_the_wheel_holds_the_package_and_no_test_machinery(tmp_path: Path) -> None:
    src = source_copy(tmp_path)
    run(command(BUILD, sys.executable), cwd=src)
    wheel = zipfile.ZipFile(src / WHEEL)
    names = set(wheel.namelist())
    modules = {n for n in names if n.endswith(".py")}
    expected = {p.relative_to(REPO).as_posix() for p in (REPO / "kafka_spark").rglob("*.py")}
    assert modules == expected | {"pyspark_kafka_spark.py", "pyspark_kafka_spark_log.py"}

    # the test servers are the harness's, and none of their modules, poms or logging files is in the wheel
    assert TEST_SERVERS <= HARNESS_MODULES
    assert not {f"kafka_spark/local/{m}.py" for m in HARNESS_MODULES} & names
    data = {n.rsplit("/", 1)[-1] for n in names if n.startswith("kafka_spark/local/")}
    for folder in ("poms", "templates"):
        harness_files = {p.name for p in (HARNESS / folder).iterdir()}
        assert harness_files and not harness_files & data, folder
    # the poms are those of `kafka-spark local fetch`: the broker's and Spark's
    poms = {n.rsplit("/", 1)[-1] for n in names if n.startswith("kafka_spark/local/poms/")}
    assert poms == {pom for pom, _ in ARTIFACT_SETS.values()}
    assert any(n.startswith("kafka_spark/local/templates/") for n in names)

    sources = {name: wheel.read(name).decode() for name in sorted(modules)}
    for name, text in sources.items():
        tree = ast.parse(text)
        imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not {m for m in imported if m.split(".")[0] in {"harness", "tests"}}, name
    # nothing only the tests import
    assert unused(sources, REPO, _entry_modules(wheel)) == set()

"""The installed package is the product: the wheel holds every module of `kafka_spark` and its data files, and
none of the tests' machinery (tests/harness: the fault proxy, the 3-node cluster, the S3 and standalone
servers), which no module of the package imports."""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

from wheel_build import BUILD, REPO, WHEEL, command, run, source_copy

HARNESS = {p.stem for p in (REPO / "tests" / "harness").glob("*.py")} - {"__init__"}


def test_the_wheel_holds_the_package_and_no_test_machinery(tmp_path: Path) -> None:
    src = source_copy(tmp_path)
    run(command(BUILD, sys.executable), cwd=src)
    names = set(zipfile.ZipFile(src / WHEEL).namelist())
    modules = {n for n in names if n.endswith(".py")}
    expected = {p.relative_to(REPO).as_posix() for p in (REPO / "kafka_spark").rglob("*.py")}
    assert modules == expected | {"pyspark_kafka_spark.py", "pyspark_kafka_spark_log.py"}
    assert any(n.startswith("kafka_spark/local/templates/") for n in names)
    assert any(n.startswith("kafka_spark/local/poms/") for n in names)
    assert not {f"kafka_spark/local/{m}.py" for m in HARNESS} & names
    with zipfile.ZipFile(src / WHEEL) as wheel:
        for name in sorted(modules):
            tree = ast.parse(wheel.read(name))
            imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
            imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
            assert not {m for m in imported if m.split(".")[0] in {"harness", "tests"}}, name

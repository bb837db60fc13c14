"""The launcher local sessions give Spark for Python processes: this interpreter, minus Spark's zipped PySpark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from kafka_spark.local.worker_python import installed_pyspark_zip, launcher_text, worker_python

PROBE = "import json, os, pyspark; print(json.dumps([os.environ.get('PYTHONPATH'), pyspark.__file__]))"
PACKAGE = Path(pyspark.__file__).parent


def run(launcher: str, pythonpath: str | None) -> tuple[str | None, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([launcher, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60, check=True)
    path, module = json.loads(out.stdout)
    return path, module


@pytest.fixture(scope="module")
def zipped() -> Path:
    found = installed_pyspark_zip()
    assert found is not None, "pip-installed pyspark ships python/lib/pyspark.zip"
    assert found == PACKAGE / "python" / "lib" / "pyspark.zip"
    return found


def test_spark_zip_is_dropped_and_the_installed_package_imported(zipped: Path) -> None:
    launcher = worker_python()
    assert launcher != sys.executable
    py4j = next(PACKAGE.glob("python/lib/py4j-*.zip"))
    # Spark's order: its zips first, then its jar, then the user's entries (one with a space).
    path, module = run(launcher, f"{zipped}:{py4j}:/opt/with space/lib:{zipped}:/last")
    assert path == f"{py4j}:/opt/with space/lib:/last"
    assert Path(module) == PACKAGE / "__init__.py"
    # the same PYTHONPATH on the bare interpreter imports the zip: what the launcher avoids
    bare = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, "PYTHONPATH": f"{zipped}:{py4j}"},
                          capture_output=True, text=True, timeout=60, check=True)
    assert ".zip" in json.loads(bare.stdout)[1]


def test_only_the_zip_unset_or_other_entries_left_alone(zipped: Path, tmp_path: Path) -> None:
    launcher = worker_python()
    assert run(launcher, str(zipped)) == (None, str(PACKAGE / "__init__.py"))
    assert run(launcher, None)[0] is None
    other = tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip"  # another Spark's zip: not ours to drop
    other.parent.mkdir(parents=True)
    assert run(launcher, f"{other}:/x*y:/z")[0] == f"{other}:/x*y:/z"


def test_arguments_and_exit_status_pass_through(tmp_path: Path) -> None:
    launcher = worker_python()
    proc = subprocess.run([launcher, "-c", "import sys; print(sys.argv[1:]); sys.exit(7)", "a b", "$HOME", "*"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert proc.returncode == 7
    assert proc.stdout.strip() == "['a b', '$HOME', '*']"


def test_text_quotes_paths(tmp_path: Path) -> None:
    text = launcher_text("/opt/py thon/bin/python", Path("/it's/pyspark.zip"))
    assert "PYSPARK_ZIP='/it'\"'\"'s/pyspark.zip'" in text
    assert "exec '/opt/py thon/bin/python' \"$@\"" in text


def test_falls_back_to_this_interpreter_when_the_launcher_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert worker_python(str(blocker)) == sys.executable


def test_local_sessions_use_it() -> None:
    from kafka_spark.local.spark import local_spark_configs

    conf = local_spark_configs(jars=False)
    assert conf["spark.pyspark.python"] == conf["spark.pyspark.driver.python"] == worker_python()


def test_a_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    shared = tmp_path / f"kafka-spark-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    assert worker_python(str(tmp_path)) == sys.executable
    shared.chmod(0o700)
    assert worker_python.__wrapped__(str(tmp_path)) != sys.executable

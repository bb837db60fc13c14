"""The built wheel in environments that already have another supported PySpark (the newest 4.1 and 4.0): the install
commands of docs/install.md leave that PySpark untouched, Spark registers `pykafka` by itself and reads a topic, the
harness picks the jars for that PySpark, and the stream reader says which PySpark it needs.

The environment (PySpark and the package's other dependencies at the tested versions) is built once and
cached under the kafka-spark cache directory, with PySpark's wheel; each run removes kafka-spark from it and
installs the freshly built wheel. Set KAFKA_SPARK_COMPAT_PYSPARK to other versions (comma-separated) to try them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from wheel_build import BUILD, DRY_RUN, INSTALL, REPO, command, run, source_copy

from kafka_spark.local.jars import cache_dir

APP = Path(__file__).parent / "compat_app.py"
# The oldest minor the package declares and the one between it and the repository's pin.
PYSPARKS = os.environ.get("KAFKA_SPARK_COMPAT_PYSPARK", "4.1.4,4.0.5").split(",")


def constraints_without_spark(path: Path) -> Path:
    """The repository's constraints minus PySpark and Delta, whose versions the target environment chooses."""
    keep = [line for line in (REPO / "constraints.txt").read_text().splitlines()
            if not re.match(r"(?i)^(pyspark|delta[-_]spark)==", line)]
    path.write_text("\n".join(keep) + "\n")
    return path


def pyspark_wheel(version: str) -> Path:
    """PySpark's wheel, built from its sdist once and kept in the cache."""
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(f"pyspark-{version}-*.whl"))
    if not found:
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), f"pyspark=={version}"])
        found = sorted(wheels.glob(f"pyspark-{version}-*.whl"))
    return found[0]


def spark_env(version: str, tmp_path: Path) -> Path:
    """A cached virtual environment with PySpark `version` and the package's dependencies, without the package."""
    deps = (REPO / "pyproject.toml").read_bytes() + (REPO / "constraints.txt").read_bytes()
    key = hashlib.sha256(deps + sys.version.encode()).hexdigest()[:12]
    venv = cache_dir() / "envs" / f"pyspark-{version}-{key}"
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(venv)])
        constraints = constraints_without_spark(tmp_path / "constraints.txt")
        run([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), str(pyspark_wheel(version))])
        # The dependencies at the tested versions, so that a run needs no downloads; the package comes per run.
        requires = run([sys.executable, "-c", "import tomllib, sys; print('\\n'.join(tomllib.load("
                        "open(sys.argv[1], 'rb'))['project']['dependencies']))", str(REPO / "pyproject.toml")])
        run([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), *requires.stdout.split()])
        (venv / ".complete").write_text(version)
    run([str(python), "-m", "pip", "uninstall", "-y", "-q", "kafka-spark"])
    return python




def installed_pyspark(python: Path) -> str:
    return run([str(python), "-c", "from importlib.metadata import version; print(version('pyspark'))"]).stdout.strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sources with the wheel built in it by docs/install.md's command, once for every version."""
    src = source_copy(tmp_path_factory.mktemp("wheel-source"))
    run(command(BUILD, sys.executable), cwd=src)
    return src


@pytest.fixture(scope="module")
def compat_topic(kafka) -> str:
    name = "compat-other-pyspark"
    kafka.create_topic(name, partitions=2)
    kafka.tools.produce_perf(name, 500, record_size=60)
    return name


def test_documented_install_commands_are_the_tested_ones() -> None:
    page = (REPO / "docs" / "install.md").read_text()
    for line in (BUILD, DRY_RUN, INSTALL):
        assert line in page


@pytest.mark.timeout(1800)  # a cold machine downloads and builds PySpark's wheel once
@pytest.mark.parametrize("version", PYSPARKS)
def test_wheel_in_an_environment_with_another_pyspark(version: str, kafka, compat_topic, built: Path,
                                                     tmp_path: Path) -> None:
    python = spark_env(version, tmp_path)
    before = installed_pyspark(python)
    assert before == version

    run(command(DRY_RUN, str(python)), cwd=built)
    report = json.loads((built / "pip-report.json").read_text())
    planned = {item["metadata"]["name"].lower() for item in report["install"]}
    assert "kafka-spark" in planned and "pyspark" not in planned, planned
    run(command(INSTALL, str(python)), cwd=built)
    assert installed_pyspark(python) == before

    # The driver and its Python workers run that environment's interpreter, as docs/install.md says they must.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    out = run([str(python), str(APP), kafka.bootstrap, compat_topic], env=env, cwd=tmp_path, timeout=600)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pyspark"] == version
    assert result["rows"] == 500 and result["same_as_spark_kafka"] and result["delta_rows"] == 500
    assert result["written_back"], "write.format('pykafka') did not land the rows it was given"
    minor = ".".join(version.split(".")[:2])
    assert result["jars"]["spark.version"] == f"[{minor}.0,{version}]"
    assert result["jars"]["delta.artifact"] == f"delta-spark_{minor}_2.13"
    if tuple(map(int, version.split(".")[:2])) < (4, 2):
        assert ("PySparkVersionError: readStream.format('pykafka') (admission control of Python stream sources) "
                f"needs PySpark 4.2 or newer; this is PySpark {version}") in result["stream_error"]
    if tuple(map(int, version.split(".")[:2])) < (4, 1):
        assert ("PySparkVersionError: writeStream.format('pykafka') (Arrow stream writers) needs PySpark 4.1 or "
                f"newer; this is PySpark {version}") in result["write_stream_error"]
    else:
        assert result["write_stream_error"] == ""

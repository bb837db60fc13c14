"""The built wheel in environments that already have another supported PySpark (the oldest line, 4.0, in the suite; the
long list adds 4.3, which has no delta-spark release, and 4.1, which takes 4.0's branches everywhere): the install
commands of docs/install.md leave that PySpark untouched, Spark registers `pykafka` by itself and reads a topic and its
log files, the direct writer loads it into Delta, the harness picks the jars for that PySpark (no Delta's for 4.3, where
Spark's Delta writer fails with DeltaSparkError), and the stream features run or say which PySpark they need.

The environment (PySpark and the package's dependencies at the tested versions) is built once and cached under the
kafka-spark cache directory, with PySpark's wheel, keyed on those dependencies and pins alone (spark_envs.py); each
run removes kafka-spark from it and installs the freshly built wheel. Set KAFKA_SPARK_COMPAT_PYSPARK to other
versions (comma-separated) to try them; the long list is `KAFKA_SPARK_COMPAT_PYSPARK=4.3.0,4.1.4,4.0.5`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from broker_files import copy_log_dir
from wheel_build import BUILD, DRY_RUN, INSTALL, REPO, command, run, source_copy

from kafka_spark.local.jars import CONNECTOR_BEFORE_RELEASE
from kafka_spark.segments.checkpoints import HIGH_WATERMARK, parse_offset_checkpoint
from kafka_spark.spark.versions import DELTA_SPARK_NEWEST, STREAM_READ, STREAM_WRITE

APP = Path(__file__).parent / "compat_app.py"
# The oldest minor the package declares; the long list adds the newest (newer than the repository's pin, and than
# delta-spark's) and the one between the oldest and the pin.
PYSPARKS = os.environ.get("KAFKA_SPARK_COMPAT_PYSPARK", "4.0.5").split(",")
TOPIC_RECORDS = 500


def minor(version: str) -> tuple[int, ...]:
    return tuple(map(int, version.split(".")[:2]))


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
    kafka.tools.produce_perf(name, TOPIC_RECORDS, record_size=60)
    return name


@pytest.fixture(scope="module")
def compat_log_copy(kafka, compat_topic: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The topic's log files, copied from the broker's log dir for `format("pykafka-log")` once the broker has
    checkpointed their high watermarks (every few seconds), up to which the log source reads."""
    checkpoint = Path(kafka.log_dir) / HIGH_WATERMARK
    deadline = time.monotonic() + 60
    while sum(offset for (topic, _), offset in parse_offset_checkpoint(checkpoint.read_text()).items()
              if topic == compat_topic) < TOPIC_RECORDS:
        assert time.monotonic() < deadline, "the broker did not checkpoint the topic's high watermarks"
        time.sleep(0.5)
    return copy_log_dir(kafka.log_dir, [compat_topic], tmp_path_factory.mktemp("compat-log-dir"))


def test_documented_install_commands_are_the_tested_ones() -> None:
    page = (REPO / "docs" / "install.md").read_text()
    for line in (BUILD, DRY_RUN, INSTALL):
        assert line in page


@pytest.mark.timeout(1800)  # a cold machine downloads and builds PySpark's wheel once
@pytest.mark.parametrize("version", PYSPARKS)
def test_wheel_in_an_environment_with_another_pyspark(version: str, kafka, compat_topic, compat_log_copy: Path,
                                                     built: Path, pyspark_envs, tmp_path: Path) -> None:
    python = pyspark_envs(version, tmp_path)
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
    out = run([str(python), str(APP), kafka.bootstrap, compat_topic, str(compat_log_copy)], env=env, cwd=tmp_path,
              timeout=600)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pyspark"] == version
    assert result["rows"] == result["log_rows"] == TOPIC_RECORDS, result
    assert result["same_as_spark_kafka"] and result["log_same"], result
    assert result["direct_writer"] == "direct" and result["direct_rows"] == TOPIC_RECORDS, result
    assert result["written_back"], "write.format('pykafka') did not land the rows it was given"
    released = ".".join(version.split(".")[:2])
    before = CONNECTOR_BEFORE_RELEASE.get(released)
    assert result["jars"]["spark.version"] == (f"[{before},{before}]," if before else "") + f"[{released}.0,{version}]"
    if minor(version) <= DELTA_SPARK_NEWEST:
        assert result["jars"]["delta.artifact"] == f"delta-spark_{released}_2.13"
        assert result["delta_rows"] == TOPIC_RECORDS and result["spark_writer_error"] == ""
    else:
        assert "delta.artifact" not in result["jars"], "Delta's jars for a Spark no Delta release is built for"
        error = result["spark_writer_error"]
        assert error.startswith("DeltaSparkError: /") and error.endswith(
            ": writer 'spark' (Spark's Delta writer) needs Delta Lake on Spark (delta-spark), which has no release for "
            f"PySpark {version} yet (the newest supports PySpark 4.2): write with the direct writer "
            "(writer='direct', Delta through delta-rs), or use PySpark 4.2 or older"), error
    if minor(version) < STREAM_READ:
        assert ("PySparkVersionError: readStream.format('pykafka') (admission control of Python stream sources) "
                f"needs PySpark 4.2 or newer; this is PySpark {version}") in result["stream_error"]
    else:
        assert result["stream_error"] == "" and result["stream_rows"] == TOPIC_RECORDS
    if minor(version) < STREAM_WRITE:
        assert ("PySparkVersionError: writeStream.format('pykafka') (Arrow stream writers) needs PySpark 4.1 or "
                f"newer; this is PySpark {version}") in result["write_stream_error"]
    else:
        assert result["write_stream_error"] == ""

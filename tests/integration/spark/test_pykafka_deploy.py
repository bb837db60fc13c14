"""`format("pykafka")` under spark-submit on a standalone cluster whose executors are separate processes: the run
reads the same DataFrame as the test's local session. (`./spark-submit.sh` in local mode runs every job test.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from chispa import assert_df_equality

REPO = Path(__file__).resolve().parents[3]
APP = Path(__file__).parent / "apps" / "pykafka_to_parquet.py"


@pytest.fixture(scope="module")
def deploy_topic(kafka):
    name = "pykafka-deploy"
    kafka.create_topic(name, partitions=3)
    kafka.tools.produce_perf(name, 2000, record_size=80, props={"compression.type": "zstd"})
    return name


def submit(*args: str) -> dict:
    """Run the app with ./spark-submit.sh; return the JSON line it prints."""
    proc = subprocess.run([str(REPO / "spark-submit.sh"), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_same_as_local(spark, kafka, topic, written):
    rows = spark.read.parquet(str(written))
    assert rows.count() == 2000
    local = spark.read.format("pykafka").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .option("subscribe", topic).load()
    assert_df_equality(rows, local, ignore_row_order=True, ignore_nullable=True)


def test_standalone_cluster_reads_the_same_dataframe(spark, kafka, standalone, deploy_topic, tmp_path):
    out = tmp_path / "rows"
    conf = [arg for k, v in standalone.submit_conf().items() if k != "spark.master" for arg in ("--conf", f"{k}={v}")]
    report = submit("--master", standalone.url, *conf, str(APP), kafka.bootstrap, deploy_topic, str(out))
    assert report["master"] == standalone.url
    assert report["executors"] >= 1
    assert_same_as_local(spark, kafka, deploy_topic, out)
    status = standalone.status()
    apps = status["completedapps"] + status["activeapps"]
    assert any(a["name"] == "pykafka-to-parquet" for a in apps)
    # The read tasks ran in executor JVMs that the workers started, not in the driver.
    ran_tasks = [log for log in standalone.executor_logs() if "Running task" in log.read_text(errors="replace")]
    assert ran_tasks, standalone.executor_logs()

"""Shared fixtures: real servers from kafka_spark.local and tests/harness, started once per test session and always
stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))
import scheduling  # noqa: E402  (beside this file; importable under --import-mode=importlib through the path)

# The suite replays the same generated cases every run so a result is reproducible; set
# HYPOTHESIS_PROFILE=explore to draw new ones (with RECORDS_FUZZ_EXAMPLES for a longer search).
# No per-example deadline: on a shared 2-core machine a slow example is load, not a finding, and a
# deadline miss there fails the run as "flaky" while proving nothing about the code.
settings.register_profile("suite", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

# Every JVM the suite starts lives seconds to minutes: C1 alone takes a third less CPU than C1+C2 for the
# same tests, and the suite is CPU-bound on two cores (kafka_spark/local/process.py).
os.environ.setdefault("KAFKA_SPARK_JVM_QUICK_START", "1")


@pytest.fixture(scope="session", autouse=True)
def spark_scratch_in_the_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Spark's scratch directories (a session's copies of its jars, 36 MB, block manager files) under this run's
    temporary directory, for every JVM the tests start: one that a test SIGKILLs cannot delete its own, and pytest
    removes old runs' directories where /tmp would keep them for good."""
    if "SPARK_LOCAL_DIRS" not in os.environ:
        scratch = tmp_path_factory.getbasetemp() / "spark-local"
        scratch.mkdir(exist_ok=True)
        os.environ["SPARK_LOCAL_DIRS"] = str(scratch)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The tier follows the folder, so a test cannot forget its marker.
    for item in items:
        parts = Path(str(item.fspath)).relative_to(TESTS).parts
        if parts[0] == "integration":
            item.add_marker(pytest.mark.integration)
        elif parts[0] == "spark":
            item.add_marker(pytest.mark.spark)
    if scheduling.grouped(config):
        scheduling.schedule(items)


def _java_descendants() -> dict[int, str]:
    """pid -> command line of every `java` process below this one, except PySpark's gateway JVM (it lives
    as long as the interpreter that launched it)."""
    if not Path("/proc").is_dir():
        return {}
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
    found, stack = {}, list(children.get(os.getpid(), ()))
    while stack:
        pid = stack.pop()
        stack += children.get(pid, ())
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if exe.endswith("/java") and not cmd.rstrip("\0").endswith("pyspark-shell"):
            found[pid] = cmd.replace("\0", " ")[:200]
    return found


STRAYS = "stray_jvms"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(scheduling.RareServersPlugin(), "rare-servers")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Every server a fixture started must be gone once the fixtures are torn down: a leftover broker or
    # JVM would hold ports and memory after the run. Give stops in flight a few seconds, then fail the run.
    # An xdist worker checks its own processes and reports to the controller, which fails the run.
    deadline = time.monotonic() + 10
    while (strays := _java_descendants()) and time.monotonic() < deadline:
        time.sleep(0.5)
    if strays:
        listing = "\n".join(f"  {pid}: {cmd}" for pid, cmd in strays.items())
        print(f"\nstray JVMs after the test session (killed now):\n{listing}")
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        output = getattr(session.config, "workeroutput", None)
        if output is not None:
            output[STRAYS] = listing
    if getattr(session.config, "_stray_workers", None):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist's: a worker finished
    listing = getattr(node, "workeroutput", {}).get(STRAYS)
    if listing:
        print(f"\nstray JVMs on {node.gateway.id} (killed):\n{listing}")
        node.config._stray_workers = True


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Single-node Kafka 4.x (KRaft) with PLAINTEXT, SASL_PLAINTEXT, SASL_SSL, SSL and MTLS listeners."""
    from kafka_spark.local import start_kafka

    node = start_kafka(tmp_path_factory.mktemp("kafka4"), secure=True)
    yield node
    node.stop()


# Token lifetime of the test OAuth server's tokens: short, so refresh and re-authentication happen within a test.
OAUTH_TOKEN_SECONDS = 10
# Session length of the OAUTHBEARER listeners that ask for re-authentication (connections.max.reauth.ms).
OAUTH_REAUTH_MS = 4000


@pytest.fixture(scope="session")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """An OAuth 2 / OIDC server (mock-oauth2-server) whose `kafka` issuer signs client-credentials JWTs."""
    from harness.oauth_server import start_oauth_server

    server = start_oauth_server(tmp_path_factory.mktemp("oauth"), token_expiry_s=OAUTH_TOKEN_SECONDS)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oauth_kafka(oauth_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Kafka 4.x with OAUTHBEARER listeners: unsecured tokens, unsecured with short sessions, and JWTs checked
    against `oauth_server`'s JWKS (short sessions too); see tests/harness/oauth_kafka.py."""
    from harness.oauth_kafka import start_oauth_kafka

    node = start_oauth_kafka(tmp_path_factory.mktemp("oauth-kafka"), oauth_server, reauth_ms=OAUTH_REAUTH_MS)
    yield node
    node.stop()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Three-node Kafka 4.x KRaft cluster."""
    from harness.cluster import KafkaCluster

    cluster = KafkaCluster(3, tmp_path_factory.mktemp("cluster")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from harness.zookeeper import ZooKeeperServer

    zk = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield zk
    zk.stop()


@pytest.fixture(scope="session")
def kafka39(zookeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Kafka 3.9 in ZooKeeper mode (registered at the ZooKeeper root)."""
    from harness.kafka39 import Kafka39Broker

    broker = Kafka39Broker(zookeeper, tmp_path_factory.mktemp("kafka39")).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka39_legacy(zookeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Kafka 3.9 (ZooKeeper chroot /legacy) whose topics keep message format v1; v0 per topic."""
    from harness.kafka39 import Kafka39Broker

    broker = Kafka39Broker(zookeeper, tmp_path_factory.mktemp("kafka39-legacy"), legacy=True,
                           zk_root="/legacy").start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Local SparkSession (local[2]) with Delta and Spark's Kafka connector."""
    from kafka_spark.local.spark import local_spark

    # managed tables of this process only: xdist workers run side by side
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = local_spark("kafka-spark-tests", extra={"spark.sql.warehouse.dir": str(warehouse)})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """An S3-compatible server (moto) on 127.0.0.1 with the bucket `lake`."""
    from harness.s3 import start_s3

    server = start_s3(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark_s3(spark, s3):
    """The `spark` session with s3a:// pointed at the `s3` server (the jars are on every local session)."""
    from kafka_spark.local.spark import set_hadoop_conf

    set_hadoop_conf(spark, s3.hadoop_conf())
    return spark


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:40]
    return f"{base}-{uuid.uuid4().hex[:8]}"

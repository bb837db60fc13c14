"""The local servers are real and behave: listeners, auth, TLS, tools, Spark's connector, Delta, ZooKeeper."""

from __future__ import annotations

import json
import os
import ssl
from pathlib import Path

import pytest

from kafka_spark.client.net.probe import api_versions
from kafka_spark.local.kafka import SASL_USERS, start_kafka
from kafka_spark.local.tools import ToolError

FETCH, API_VERSIONS = 1, 18


def test_every_listener_answers_api_versions(kafka):
    assert set(kafka.listeners) == {"PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL", "MTLS"}
    contexts = {"SSL": kafka.ssl_context(), "SASL_SSL": kafka.ssl_context(),
                "MTLS": kafka.ssl_context(client_certificate=True)}
    for name, port in kafka.listeners.items():
        versions = api_versions("127.0.0.1", port, ssl_context=contexts.get(name))
        # Kafka 4.1 serves Fetch 4-18 and ApiVersions 0-4.
        assert versions[FETCH] == (4, 18), name
        assert versions[API_VERSIONS][0] == 0, name
    # MTLS takes no client without a certificate from the test CA
    foreign = kafka.ssl_context()
    foreign.load_cert_chain(str(kafka.tls.foreign_client_pem))
    for context in (kafka.ssl_context(), foreign):
        with pytest.raises(ssl.SSLError, match="certificate"):
            api_versions("127.0.0.1", kafka.listeners["MTLS"], ssl_context=context)


def test_ssl_certificate_verifies_against_test_ca_only(kafka):
    import socket

    with socket.create_connection(("127.0.0.1", kafka.listeners["SSL"])) as raw, \
            kafka.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        cert = tls.getpeercert()
    assert ("IP Address", "127.0.0.1") in cert["subjectAltName"]
    wrong = ssl.create_default_context(cafile=str(kafka.tls.foreign_ca_pem))
    with pytest.raises(ssl.SSLCertVerificationError):
        api_versions("127.0.0.1", kafka.listeners["SSL"], ssl_context=wrong)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_user_authenticates_and_wrong_password_is_refused(kafka, tmp_path, mechanism):
    user, password = next(iter(SASL_USERS.items()))
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"

    def config(pw: str) -> Path:
        return kafka.tools.client_config(tmp_path / f"{pw}.properties", {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'org.apache.kafka.common.security.{module} required '
                                f'username="{user}" password="{pw}";',
            "default.api.timeout.ms": 15000,
            "request.timeout.ms": 10000,
        })

    sasl = kafka.address("SASL_PLAINTEXT")
    kafka.create_topic(f"sasl-{mechanism.lower()}")
    ok = kafka.tools.run("topics", "--bootstrap-server", sasl, "--list", "--command-config", str(config(password)))
    assert f"sasl-{mechanism.lower()}" in ok.stdout.split()
    with pytest.raises(ToolError, match=r"(?i)authentication failed"):
        kafka.tools.run("topics", "--bootstrap-server", sasl, "--list",
                        "--command-config", str(config("not-" + password)), timeout=120)


def test_perf_producer_records_read_back_by_sparks_kafka_source(kafka, spark, topic_name):
    kafka.create_topic(topic_name, partitions=3)
    kafka.tools.produce_perf(topic_name, 100_000, record_size=100)
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
          .option("subscribe", topic_name).option("startingOffsets", "earliest")
          .option("endingOffsets", "latest").load())
    stats = df.groupBy("partition").agg({"offset": "max", "*": "count"}).collect()
    assert sum(r["count(1)"] for r in stats) == 100_000
    # Each partition holds a gap-free run of offsets starting at 0.
    for r in stats:
        assert r["max(offset)"] == r["count(1)"] - 1
    assert {len(v) for (v,) in df.select("value").distinct().limit(50).collect()} == {100}


def test_delta_table_round_trips_and_reads_independently(spark, tmp_path):
    from deltalake import DeltaTable

    path = str(tmp_path / "table")
    rows = [(i, f"user-{i % 7}") for i in range(1000)]
    spark.createDataFrame(rows, "id long, user string").write.format("delta").save(path)
    spark.createDataFrame(rows[:10], "id long, user string").write.format("delta").mode("append").save(path)
    back = spark.read.format("delta").load(path)
    assert back.count() == 1010
    assert back.where("id = 3").count() == 2
    table = DeltaTable(path)
    assert table.version() == 1
    assert table.to_pyarrow_table().num_rows == 1010


def test_zookeeper_lists_the_kafka39_broker(kafka39):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=kafka39.zookeeper.connect, timeout=10)
    zk.start(timeout=15)
    try:
        ids = zk.get_children("/brokers/ids")
        assert ids == [str(kafka39.broker_id)]
        registration = json.loads(zk.get(f"/brokers/ids/{kafka39.broker_id}")[0])
        assert registration["port"] == kafka39.port
        assert registration["host"] == "127.0.0.1"
    finally:
        zk.stop()


def test_legacy_broker_stores_message_formats_v0_and_v1(kafka39_legacy, topic_name):
    tools = kafka39_legacy.tools
    no_idempotence = {"enable.idempotence": "false"}
    for magic, fmt in ((0, "0.9.0"), (1, "0.10.2")):
        topic = f"{topic_name}-v{magic}"
        tools.create_topic(topic, configs={"message.format.version": fmt})
        tools.console_produce(topic, ["k1:v1", "k2:v2"], props=no_idempotence, key_separator=":")
        segment = kafka39_legacy.log_dir / f"{topic}-0" / ("0" * 20 + ".log")
        dump = tools.dump_log([segment])
        assert dump.count(f"magic: {magic}") == 2, dump


def test_three_node_cluster_spreads_leaders(kafka_cluster, topic_name):
    tools = kafka_cluster.tools
    tools.create_topic(topic_name, partitions=3, replication=3)
    described = tools.run("topics", "--describe", "--topic", topic_name).stdout
    leaders = {line.split("Leader: ")[1].split()[0] for line in described.splitlines() if "Leader: " in line}
    assert leaders == {"1", "2", "3"}


def _java_processes_mentioning(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "java" in cmdline and text in cmdline:
            found.append(int(pid))
    return found


def test_stopping_leaves_no_java_process(tmp_path):
    node = start_kafka(tmp_path / "short-lived", secure=False)
    assert _java_processes_mentioning(str(node.data_dir)) == [node.process.pid]
    node.stop()
    assert _java_processes_mentioning(str(node.data_dir)) == []


def test_killing_the_owner_with_sigterm_stops_its_servers():
    import signal
    import subprocess
    import sys

    code = (
        "from kafka_spark.local.kafka import start_kafka\n"
        "n = start_kafka(secure=False)\n"
        "print(n.process.pid, n.data_dir, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid, data_dir = owner.stdout.readline().split()
    assert _java_processes_mentioning(data_dir) == [int(pid)]
    owner.send_signal(signal.SIGTERM)
    owner.wait(timeout=60)
    assert _java_processes_mentioning(data_dir) == []

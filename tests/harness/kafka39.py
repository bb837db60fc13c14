"""Kafka 3.9 in ZooKeeper mode, the tests' older broker; the legacy variant keeps topics in message format v0/v1."""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness.fetch import classpath
from harness.zookeeper import SERVER_LOGGING, SERVER_MAIN, TOOLS_LOGGING, ZooKeeperEnsemble, ZooKeeperServer
from kafka_spark.client.net.probe import answers
from kafka_spark.local.class_archive import write_server_archives
from kafka_spark.local.config import write_properties
from kafka_spark.local.process import ServerProcess, free_port, java_argv
from kafka_spark.local.tools import MAIN_CLASSES, KafkaTools
from kafka_spark.local.topics import CreatesTopics

KAFKA39_VERSION = "3.9.1"
# With IBP >= 3.0 the broker ignores message.format.version, so the legacy broker pins IBP 2.8.
LEGACY_SETTINGS = {"inter.broker.protocol.version": "2.8", "log.message.format.version": "0.10.2"}


class Kafka39Tools(KafkaTools):
    """Kafka 3.9's Java tools: its jars, its logging (reload4j) and the one tool class that moved in Kafka 4."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__("kafka39", bootstrap)

    def classpath(self) -> str:
        return classpath("kafka39")

    def main_class(self, tool: str) -> str:
        return "kafka.tools.ConsoleProducer" if tool == "console-producer" else MAIN_CLASSES[tool]

    def log_props(self) -> list[str]:
        return [TOOLS_LOGGING]


class Kafka39Broker(CreatesTopics):
    """One ZooKeeper-mode broker; `zk_root` is its chroot inside the shared ZooKeeper."""

    def __init__(self, zookeeper: ZooKeeperServer | ZooKeeperEnsemble, data_dir: Path | None = None, broker_id: int = 0,
                 legacy: bool = False, zk_root: str = "", heap: str = "512m", oauthbearer: bool = False) -> None:
        self.zookeeper = zookeeper
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-kafka39-"))
        self.broker_id = broker_id
        self.legacy = legacy
        self.zk_root = zk_root
        self.heap = heap
        self.port = free_port()
        # a second listener, SASL_PLAINTEXT with Kafka's unsecured OAUTHBEARER tokens (the default validator)
        self.sasl_port = free_port() if oauthbearer else None
        self.process: ServerProcess | None = None
        self.version = KAFKA39_VERSION

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def zookeeper_connect(self) -> str:
        """The ZooKeeper connection string this broker registers under (with its chroot)."""
        return self.zookeeper.connect + self.zk_root

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    @property
    def tools(self) -> Kafka39Tools:
        return Kafka39Tools(self.bootstrap)

    def _listeners(self) -> dict[str, object]:
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        if self.sasl_port is None:
            return {"listeners": listeners[0], "advertised.listeners": listeners[0]}
        listeners.append(f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}")
        return {
            "listeners": ",".join(listeners), "advertised.listeners": ",".join(listeners),
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="broker";',
        }

    def start(self, timeout: float = 90.0) -> Kafka39Broker:
        props = {
            "broker.id": self.broker_id,
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.connection.timeout.ms": 18000,
            **self._listeners(),
            "log.dirs": self.log_dir,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": 1,
            "auto.create.topics.enable": "true",
            "delete.topic.enable": "true",
            "num.network.threads": 2,
            "num.io.threads": 2,
            **(LEGACY_SETTINGS if self.legacy else {}),
        }
        conf = write_properties(self.data_dir / "server.properties", props)
        argv = java_argv(classpath("kafka39"), "kafka.Kafka", [str(conf)], heap=self.heap, props=[SERVER_LOGGING])
        self.process = ServerProcess(f"kafka39-{self.broker_id}", argv, self.log_path).start()
        self.process.wait_ready(self.ready, timeout)
        return self

    def restart(self, new_port: bool = False, timeout: float = 90.0) -> Kafka39Broker:
        """Stop and start again with the same data; `new_port` moves its listener to another free port."""
        self.stop()
        if new_port:
            self.port = free_port()
        return self.start(timeout)

    def ready(self) -> bool:
        return answers("127.0.0.1", self.port)

    def stop(self) -> None:
        if self.process:
            self.process.stop()


def start_kafka39(legacy: bool = False, zookeeper: ZooKeeperServer | None = None) -> Kafka39Broker:
    """Start ZooKeeper (unless given) and one Kafka 3.9 broker registered in it."""
    zk = zookeeper or ZooKeeperServer().start()
    return Kafka39Broker(zk, legacy=legacy, zk_root="/legacy" if legacy else "").start()


def build_server_archives() -> list[Path]:
    """Start and stop a ZooKeeper and a Kafka 3.9 broker so that each writes its class archive (skipped where both
    exist); the archives in place afterwards."""
    def zookeeper_mode(tmp: Path) -> None:
        zk = ZooKeeperServer(tmp / "zookeeper").start()
        Kafka39Broker(zk, tmp / "kafka39").start().stop()
        zk.stop()

    cp = classpath("kafka39")
    return write_server_archives([(cp, "kafka.Kafka"), (cp, SERVER_MAIN)], zookeeper_mode)

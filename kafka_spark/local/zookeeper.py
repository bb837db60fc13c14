"""A standalone ZooKeeper server from Kafka 3.9's class path (the ZooKeeper version Kafka 3.9 ships with)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kafka_spark.local.config import template, write_properties
from kafka_spark.local.jars import classpath
from kafka_spark.local.process import ServerProcess, free_port, java_argv
from kafka_spark.zookeeper.probe import srvr


class ZooKeeperServer:
    """ZooKeeper on 127.0.0.1 with a fresh data dir; `connect` is its connection string."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-zk-"))
        self.port = free_port()
        self.process: ServerProcess | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        props = write_properties(self.data_dir / "zookeeper.properties", {
            "tickTime": 2000,
            "dataDir": self.data_dir / "zk-data",
            "clientPort": self.port,
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": 0,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "*",
        })
        log_conf = template("log4j-server.properties", self.data_dir)
        argv = java_argv(classpath("kafka39"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", [str(props)],
                         heap="256m", props=[f"-Dlog4j.configuration=file:{log_conf}"])
        self.process = ServerProcess("zookeeper", argv, self.data_dir / "zookeeper.log").start()
        self.process.wait_ready(lambda: bool(srvr("127.0.0.1", self.port, timeout=1.0)), timeout)
        return self

    def stop(self) -> None:
        if self.process:
            self.process.stop(grace=10)

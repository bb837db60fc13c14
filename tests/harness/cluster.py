"""A multi-node Kafka 4.x KRaft cluster (every node broker+controller) for leader moves and broker failures."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from kafka_spark.local.kafka import KafkaNode, random_cluster_id
from kafka_spark.local.process import free_ports
from kafka_spark.local.tools import KafkaTools
from kafka_spark.local.topics import CreatesTopics


class KafkaCluster(CreatesTopics):
    """`size` combined KRaft nodes sharing one quorum, PLAINTEXT only."""

    def __init__(self, size: int = 3, data_dir: Path | None = None, heap: str = "384m") -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-cluster-"))
        cluster_id = random_cluster_id()
        ports = free_ports(2 * size)
        self.nodes = [
            KafkaNode(data_dir=self.data_dir / f"node-{i + 1}", node_id=i + 1, listeners={"PLAINTEXT": ports[2 * i]},
                      controller_port=ports[2 * i + 1], cluster_id=cluster_id, heap=heap)
            for i in range(size)
        ]
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        for n in self.nodes:
            n.voters = voters

    @property
    def bootstrap(self) -> str:
        """Every node's address, comma-separated."""
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def tools(self) -> KafkaTools:
        return KafkaTools("kafka4", self.bootstrap)

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def start(self, timeout: float = 120.0) -> KafkaCluster:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        for n in self.nodes:
            n.data_dir.mkdir(parents=True)
            n.start()
        for n in self.nodes:
            n.wait_ready(timeout)
        return self

    def stop(self) -> None:
        """Stop all nodes together: sequential controlled shutdowns would wait on each other's quorum."""
        import signal

        for n in self.nodes:
            if n.process:
                n.process.signal(signal.SIGTERM)
        for n in self.nodes:
            n.stop()

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

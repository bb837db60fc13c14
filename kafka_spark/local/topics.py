"""Topic creation for the local servers, through this project's client: a Java tool start costs seconds."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.topics import NewTopic, create_topics


class CreatesTopics:
    """`create_topic` for a server class with a PLAINTEXT `bootstrap` address."""

    @property
    def bootstrap(self) -> str:
        """The PLAINTEXT `host:port` addresses, comma-separated."""
        raise NotImplementedError

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 1,
                     configs: Mapping[str, object] | None = None, timeout: float = 60.0) -> None:
        """Create `topic` (CreateTopics) and wait until each of its partitions has a leader."""
        with Cluster({"bootstrap.servers": self.bootstrap}) as cluster:
            create_topics(cluster, [NewTopic(topic, partitions, replication, dict(configs or {}))], timeout)

"""`KafkaClient`: one object for the client operations the upper layers and the CLI use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.fetch.fetcher import RangeReader
from kafka_spark.client.fetch.offsets import (
    ListedOffset,
    earliest_offsets,
    latest_offsets,
    list_offsets,
    offsets_for_times,
)
from kafka_spark.client.groups.admin import GroupAdmin
from kafka_spark.client.groups.membership import GroupMember
from kafka_spark.client.metadata import ClusterMetadata, TopicPartition
from kafka_spark.client.producer.producer import Producer


class KafkaClient:
    """Metadata, offsets, fetch, groups and a producer over one set of connections.

    ``KafkaClient({"bootstrap.servers": "host:9092", ...})`` takes the Java client's property names.
    """

    def __init__(self, config: ClientConfig | Mapping[str, Any]) -> None:
        self.cluster = Cluster(config)
        self.config = self.cluster.config
        self._groups: GroupAdmin | None = None

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KafkaClient({self.cluster!r})"

    def close(self) -> None:
        """Close every connection."""
        self.cluster.close()

    # ---- metadata --------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Refresh and return the cluster metadata (every topic when `topics` is None)."""
        return self.cluster.refresh_metadata(topics)

    def topics(self, pattern: str | None = None, include_internal: bool = False) -> list[str]:
        """Topic names, optionally those in which a regular expression is found."""
        return self.cluster.matching_topics(pattern or ".*", include_internal)

    def partitions(self, topic: str) -> list[TopicPartition]:
        """The partitions of a topic."""
        return self.cluster.partitions(topic)

    # ---- offsets ---------------------------------------------------------------------------

    def list_offsets(self, specs: Mapping[TopicPartition, int],
                     isolation_level: str | None = None) -> dict[TopicPartition, ListedOffset]:
        """ListOffsets per partition (``offsets.EARLIEST``, ``offsets.LATEST`` or a timestamp in ms)."""
        return list_offsets(self.cluster, specs, isolation_level)

    def earliest_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        return earliest_offsets(self.cluster, tps)

    def latest_offsets(self, tps: Iterable[TopicPartition],
                       isolation_level: str | None = None) -> dict[TopicPartition, int]:
        """The end offset of each partition (last stable offset under read_committed)."""
        return latest_offsets(self.cluster, tps, isolation_level)

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          isolation_level: str | None = None) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp (None where there is none)."""
        return offsets_for_times(self.cluster, timestamps, isolation_level)

    # ---- fetch -----------------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, start: int, end: int, **options: Any) -> RangeReader:
        """Arrow batches with the records of offsets [start, end) (see `RangeReader` for options)."""
        return RangeReader(self.cluster, topic, partition, start, end, **options)

    # ---- groups and producing --------------------------------------------------------------

    @property
    def groups(self) -> GroupAdmin:
        """Group offsets, listing, describing and lag."""
        if self._groups is None:
            self._groups = GroupAdmin(self.cluster)
        return self._groups

    def group_member(self, group_id: str, topics: Iterable[str]) -> GroupMember:
        """A (not yet joined) member of a classic consumer group."""
        return GroupMember(self.cluster, group_id, topics, self.groups)

    def producer(self, overrides: Mapping[str, Any] | None = None) -> Producer:
        """A producer with this client's settings plus `overrides` (its own connections)."""
        config = self.config.with_overrides(overrides) if overrides else self.config
        return Producer(config)

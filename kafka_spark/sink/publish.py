"""After a table's commit, and never before it: the committed positions mirrored where lag tools look.

A Kafka consumer group (OffsetCommit) for today's tools, the old consumers' ZooKeeper layout for the
tools of that era. The table stays the source of truth: a mirror that fails fails the run with the
commit standing, and the next run (a load that finds nothing new, or the replayed micro-batch) publishes
the committed positions again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.groups.admin import GroupAdmin
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from kafka_spark.sink.options import KafkaSource, Publishing

log = logging.getLogger(__name__)


def check_publish_options(source: KafkaSource, publishing: Publishing) -> None:
    """Refuse ZooKeeper groups (to start from or publish to) without `zookeeper.connect` in `kafka`."""
    wanted = [name for name, value in (("start_zookeeper_group", source.start_zookeeper_group),
                                       ("publish_zookeeper_group", publishing.zookeeper_group)) if value]
    if wanted and ClientConfig(source.kafka).zookeeper is None:
        raise ConfigError(f"{' and '.join(wanted)} need zookeeper.connect in the Kafka properties: the ZooKeeper "
                          "that holds the group's offsets (/consumers/<group>/offsets)")


def publish_committed(publishing: Publishing, offsets: Mapping[TopicPartition, int],
                      cluster: Cluster | None = None) -> None:
    """Mirror committed `offsets` to the Kafka group and the ZooKeeper group of `publishing`."""
    if not offsets:
        return
    if publishing.group:
        if cluster is not None:
            GroupAdmin(cluster).commit(publishing.group, offsets)
        else:
            with Cluster(publishing.kafka) as own:
                GroupAdmin(own).commit(publishing.group, offsets)
    if publishing.zookeeper_group:
        from kafka_spark.zookeeper.offsets import store_offsets
        from kafka_spark.zookeeper.session import ZooKeeperSession

        settings = ClientConfig(publishing.kafka).zookeeper
        assert settings is not None  # check_publish_options ran first
        with ZooKeeperSession(settings) as session:
            store_offsets(session, publishing.zookeeper_group, offsets)
        log.info("published the offsets of %d partitions to ZooKeeper group %r", len(offsets),
                 publishing.zookeeper_group)

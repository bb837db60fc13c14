"""Topic creation with the project's client (CreateTopics), checked with Kafka's own TopicCommand."""

from __future__ import annotations

import pytest

from kafka_spark.client import Cluster, NewTopic, create_topics
from kafka_spark.errors.codes import InvalidConfigError, InvalidPartitionsError, TopicAlreadyExistsError


def test_created_topics_have_their_partitions_configs_and_leaders(kafka, topic_name):
    with Cluster({"bootstrap.servers": kafka.bootstrap}) as cluster:
        create_topics(cluster, [NewTopic(topic_name, 3, configs={"retention.ms": 3_600_000}),
                                NewTopic(f"{topic_name}-b", 2)])
        # returned only once every partition has a leader: no wait needed before reading metadata
        assert all(p.leader >= 0 for p in cluster.metadata.topic(topic_name).partitions.values())
    described = kafka.tools.run("topics", "--describe", "--topic", topic_name).stdout
    assert "PartitionCount: 3" in described and "retention.ms=3600000" in described
    assert "PartitionCount: 2" in kafka.tools.run("topics", "--describe", "--topic", f"{topic_name}-b").stdout


def test_rejected_topics_raise_the_brokers_typed_error_with_its_message(kafka, topic_name):
    kafka.create_topic(topic_name)
    with Cluster({"bootstrap.servers": kafka.bootstrap}) as cluster:
        with pytest.raises(TopicAlreadyExistsError, match=f"creating topic '{topic_name}'"):
            create_topics(cluster, [NewTopic(topic_name)])
        with pytest.raises(InvalidConfigError, match=r"no\.such\.config"):
            create_topics(cluster, [NewTopic(f"{topic_name}-c", configs={"no.such.config": 1})])
        with pytest.raises(InvalidPartitionsError):
            create_topics(cluster, [NewTopic(f"{topic_name}-p", 0)])


def test_zookeeper_mode_brokers_take_it_at_the_controller(kafka39, topic_name):
    kafka39.create_topic(topic_name, partitions=2, configs={"cleanup.policy": "compact"})
    described = kafka39.tools.run("topics", "--describe", "--topic", topic_name).stdout
    assert "PartitionCount: 2" in described and "cleanup.policy=compact" in described

"""The ZooKeeper-discovered path with a SASL login: brokers found in ZooKeeper are reached through the listener
of `security.protocol`, and OAUTHBEARER authenticates there as on a bootstrap list."""

from __future__ import annotations

import pytest
from zk_support import latest, produce

from kafka_spark.client import KafkaClient
from kafka_spark.errors import AuthenticationError

UNSECURED = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
             'unsecuredLoginStringClaim_sub="{sub}";')


@pytest.fixture(scope="module")
def sasl_broker(zookeeper, tmp_path_factory):
    from harness.kafka39 import Kafka39Broker

    broker = Kafka39Broker(zookeeper, tmp_path_factory.mktemp("kafka39-sasl"), zk_root="/sasl",
                           oauthbearer=True).start()
    yield broker
    broker.stop()


def test_an_oauthbearer_login_through_zookeeper_discovery(sasl_broker, topic_name):
    sasl_broker.create_topic(topic_name, partitions=2)
    produce(sasl_broker.bootstrap, topic_name, 40, partitions=2)
    ends = latest(sasl_broker.bootstrap, topic_name)
    props = {"zookeeper.connect": sasl_broker.zookeeper_connect, "security.protocol": "SASL_PLAINTEXT",
             "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": UNSECURED.format(sub="reader")}
    with KafkaClient(props) as client:
        # the broker ZooKeeper lists, at its SASL listener
        assert [b.address for b in client.metadata([]).brokers.values()] == [f"127.0.0.1:{sasl_broker.sasl_port}"]
        rows = sum(client.fetch(topic_name, tp.partition, 0, end).read_all().num_rows for tp, end in ends.items())
    assert rows == 40
    # a mechanism the listener does not enable is refused, naming what it enables
    plain = {**props, "sasl.mechanism": "PLAIN", "sasl.jaas.config":
             'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'}
    with KafkaClient(plain) as client, pytest.raises(AuthenticationError, match="OAUTHBEARER") as failed:
        client.metadata([])
    assert "\n" not in str(failed.value)

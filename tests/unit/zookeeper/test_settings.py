"""`zookeeper.*` settings: the connection string, chroot, timeouts and the digest that is never shown."""

from __future__ import annotations

import pickle
import re

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.errors import ConfigError
from kafka_spark.spark.source.options import parse_source_options
from kafka_spark.zookeeper.settings import ZooKeeperSettings, split_connect


@pytest.mark.parametrize(("text", "hosts", "chroot"), [
    ("127.0.0.1:2181", (("127.0.0.1", 2181),), ""),
    ("zk1:2181,zk2:2182,zk3/kafka", (("zk1", 2181), ("zk2", 2182), ("zk3", 2181)), "/kafka"),
    ("zk:2181/a/b/", (("zk", 2181),), "/a/b"),
    ("[::1]:2181/legacy", (("::1", 2181),), "/legacy"),
])
def test_connect_strings(text, hosts, chroot):
    assert split_connect(text) == (hosts, chroot)


@pytest.mark.parametrize("text", ["", "zk:notaport", "zk:2181,,zk2:2181", "zk:70000", "zk:2181/a//b", "zk 1:2181"])
def test_bad_connect_strings_name_the_option(text):
    with pytest.raises(ConfigError, match=r"kafka\.zookeeper\.connect"):
        split_connect(text, "kafka.zookeeper.connect")


def test_properties_need_connect_and_refuse_unknown_names():
    assert ZooKeeperSettings.from_properties({"bootstrap.servers": "b:1"}) is None
    with pytest.raises(ConfigError, match=re.escape("given without kafka.zookeeper.connect")):
        ZooKeeperSettings.from_properties({"zookeeper.digest.username": "u"}, prefix="kafka.")
    with pytest.raises(ConfigError, match=re.escape("unknown ZooKeeper setting 'zookeeper.conect'")):
        ZooKeeperSettings.from_properties({"zookeeper.connect": "z:1", "zookeeper.conect": "z:1"})
    with pytest.raises(ConfigError, match=re.escape("zookeeper.connection.timeout.ms must be a positive")):
        ZooKeeperSettings.from_properties({"zookeeper.connect": "z:1", "zookeeper.connection.timeout.ms": "0"})
    s = ZooKeeperSettings.from_properties({"zookeeper.connect": " z:1/c ", "zookeeper.session.timeout.ms": "6000",
                                           "zookeeper.listener.name": "EXTERNAL"})
    assert (s.connect, s.session_timeout_ms, s.connection_timeout_ms, s.listener, s.chroot) == (
        "z:1/c", 6000, 10000, "EXTERNAL", "/c")


def test_the_digest_is_never_shown():
    secret = "s3cr3t-pw"
    with pytest.raises(ConfigError) as bad:
        ZooKeeperSettings.from_properties({"zookeeper.connect": "z:1", "zookeeper.digest.password": secret})
    assert secret not in str(bad.value)
    config = ClientConfig({"zookeeper.connect": "z:1", "zookeeper.digest.username": "user",
                           "zookeeper.digest.password": secret})
    assert secret not in repr(config) and secret not in repr(config.zookeeper)
    assert config.zookeeper.digest == f"user:{secret}"
    assert config.secret_values() == [secret]
    # The option's name matches Spark's redaction pattern, so Spark's plans and UI hide the value too.
    assert re.search("(?i)secret|password|token|access[.]?key", "kafka.zookeeper.digest.password")


def test_client_config_takes_zookeeper_instead_of_bootstrap_servers():
    config = ClientConfig({"zookeeper.connect": "z:2181/legacy"})
    assert config.bootstrap_servers == () and config.zookeeper.chroot == "/legacy"
    assert pickle.loads(pickle.dumps(config)).zookeeper == config.zookeeper
    with pytest.raises(ConfigError, match=re.escape("or zookeeper.connect")):
        ClientConfig({})


def test_source_options_accept_zookeeper_connect():
    opts = parse_source_options({"kafka.zookeeper.connect": "z:1/legacy", "subscribe": "t",
                                 "startingOffsetsFromZooKeeperGroup": "old-consumer"})
    assert opts.kafka == {"zookeeper.connect": "z:1/legacy"} and opts.zookeeper_group == "old-consumer"
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap\.servers.*kafka\.zookeeper\.connect"):
        parse_source_options({"subscribe": "t"})
    with pytest.raises(ConfigError, match=r"kafka\.zookeeper\.connect: 'z:x'"):
        parse_source_options({"kafka.zookeeper.connect": "z:x", "subscribe": "t"}, "stream")
    with pytest.raises(ConfigError, match=re.escape("needs 'kafka.zookeeper.connect'")):
        parse_source_options({"kafka.bootstrap.servers": "b:1", "subscribe": "t",
                              "startingOffsetsFromZooKeeperGroup": "g"})
    with pytest.raises(ConfigError, match="must be a consumer group name"):
        parse_source_options({"kafka.zookeeper.connect": "z:1", "subscribe": "t",
                              "startingOffsetsFromZooKeeperGroup": "a/b"})

"""The jobs' ZooKeeper flags and config keys reach the sink's options; without --zookeeper they are refused."""

from __future__ import annotations

import pytest

from kafka_spark.app import load as kafka_to_delta
from kafka_spark.app.config import validate
from kafka_spark.app.source import Source, sink_settings
from kafka_spark.errors import ConfigError


def test_zookeeper_flags_reach_the_load_options():
    config, _ = kafka_to_delta.read_config(
        ["--zookeeper", "zk1:2181,zk2:2181/kafka", "--topics", "orders", "--table", "/tmp/t",
         "--start-zookeeper-group", "camus", "--publish-zookeeper-group", "delta", "-X", "zookeeper.digest.username=u",
         "-X", "zookeeper.digest.password=p"])
    validate(config)
    assert not config.embedded
    source = Source({"zookeeper.connect": config.zookeeper, "zookeeper.digest.username": "u",
                     "zookeeper.digest.password": "p"}, ["orders"], None,
                    "zookeeper zk1:2181,zk2:2181/kafka", embedded=False)
    settings = sink_settings(config, source, "/tmp/t")
    assert (settings["start_zookeeper_group"], settings["publish_zookeeper_group"]) == ("camus", "delta")


def test_zookeeper_groups_need_zookeeper(tmp_path):
    config, _ = kafka_to_delta.read_config(["-b", "b:9092", "--topics", "t", "--table", "/tmp/t",
                                            "--publish-zookeeper-group", "g"])
    with pytest.raises(ConfigError, match="need --zookeeper"):
        validate(config)
    conf = tmp_path / "job.toml"
    conf.write_text('zookeeper = "zk:2181/kafka"\ntopics = ["t"]\ntable = "/tmp/t"\nstart-zookeeper-group = "old"\n')
    config, _ = kafka_to_delta.read_config(["--config", str(conf)])
    validate(config)
    assert (config.zookeeper, config.start_zookeeper_group) == ("zk:2181/kafka", "old")

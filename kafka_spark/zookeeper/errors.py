"""Errors of the ZooKeeper layer; each names the ensemble (never a credential)."""

from __future__ import annotations

from kafka_spark.errors import ConfigError, KafkaSparkError


class ZooKeeperError(KafkaSparkError):
    """A ZooKeeper operation failed."""


class ZooKeeperUnreachableError(ZooKeeperError):
    """No member of the ensemble answered within the connection timeout."""


class ZooKeeperAccessError(ZooKeeperError):
    """ZooKeeper refused the credentials, or an ACL refused this session a znode."""


class ZooKeeperDataError(ZooKeeperError):
    """A znode is missing or does not hold what Kafka (or an old consumer) writes there."""


class ZooKeeperConfigError(ConfigError):
    """A `zookeeper.*` setting is missing or invalid."""

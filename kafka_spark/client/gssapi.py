"""SASL/GSSAPI (Kerberos, RFC 4752) through a maintained GSSAPI binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from kafka_spark.client.config import ClientConfig
    from kafka_spark.client.sasl_login import Mechanism


def gssapi_mechanism(config: ClientConfig, host: str) -> Mechanism:
    """The Kerberos client mechanism for the broker at `host`."""
    raise ConfigError("sasl.mechanism=GSSAPI is not available in this build")

"""Client configuration: Java property names, validation messages, secrets never shown."""

from __future__ import annotations

import pickle

import pytest

from kafka_spark.client.auth.login import login_config
from kafka_spark.client.config import ClientConfig, load_properties, parse_overrides
from kafka_spark.client.properties import parse_jaas_config
from kafka_spark.errors import ConfigError

SECRET = "s3cr3t-Pa55"
JAAS = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{SECRET}";'


def test_defaults_follow_the_java_client():
    c = ClientConfig({"bootstrap.servers": "a:9092, b:9093"})
    assert c.bootstrap_servers == (("a", 9092), ("b", 9093))
    assert c.security_protocol == "PLAINTEXT"
    assert c.request_timeout_ms == 30000
    assert c.fetch_max_bytes == 52428800
    assert c.max_partition_fetch_bytes == 1048576
    assert c.isolation_level == "read_uncommitted"
    assert c.acks == -1
    assert c.get("client.id") == "kafka-spark"


def test_values_are_parsed_from_strings():
    c = ClientConfig({"bootstrap.servers": "[::1]:9092", "request.timeout.ms": "1500", "acks": "1",
                      "enable.idempotence": "false", "isolation.level": "READ_COMMITTED",
                      "security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-256", "sasl.jaas.config": JAAS})
    assert c.bootstrap_servers == (("::1", 9092),)
    assert c.request_timeout_ms == 1500
    assert c.acks == 1
    assert c.read_committed
    assert c.uses_sasl and c.uses_tls
    assert c.sasl_credentials() == ("alice", SECRET)


@pytest.mark.parametrize(("props", "message"), [
    ({}, "bootstrap.servers is required"),
    ({"bootstrap.servers": "nohost"}, "not host:port"),
    ({"bootstrap.servers": "h:70000"}, "out of range"),
    ({"bootstrap.servers": "h:1", "request.timeout.ms": "soon"}, "request.timeout.ms must be an integer"),
    ({"bootstrap.servers": "h:1", "fetch.max.bytes": 0}, "fetch.max.bytes must be at least 1"),
    ({"bootstrap.servers": "h:1", "security.protocol": "TLS"}, "security.protocol must be one of PLAINTEXT, SSL"),
    ({"bootstrap.servers": "h:1", "isolation.level": "committed"}, "isolation.level must be one of"),
    ({"bootstrap.servers": "h:1", "request.timout.ms": 1}, "did you mean 'request.timeout.ms'"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT"}, "needs sasl.jaas.config"),
    ({"bootstrap.servers": "h:1", "compression.type": "brotli"}, "compression.type must be one of"),
    ({"bootstrap.servers": "h:1", "enable.idempotence": True, "acks": 1}, "requires acks=all"),
    ({"bootstrap.servers": "h:1", "enable.idempotence": "maybe"}, "must be true or false"),
])
def test_invalid_settings_name_the_property(props, message):
    with pytest.raises(ConfigError, match=message):
        login_config(props)


def test_java_only_settings_are_accepted_and_ignored():
    c = ClientConfig({"bootstrap.servers": "h:1", "key.deserializer": "x.Y", "enable.auto.commit": "false"})
    assert "key.deserializer" not in c.properties()


def test_jaas_module_must_match_the_mechanism():
    with pytest.raises(ConfigError, match=r"does not serve sasl\.mechanism=PLAIN"):
        login_config({"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": JAAS})


def test_jaas_parsing_handles_quotes_and_escapes():
    module, opts = parse_jaas_config('a.b.PlainLoginModule required username="al\\"ice" password=pw;')
    assert module == "a.b.PlainLoginModule"
    assert opts == {"username": 'al"ice', "password": "pw"}
    with pytest.raises(ConfigError) as info:
        parse_jaas_config(f"garbage {SECRET}")
    assert SECRET not in str(info.value)


def _everything_secret() -> ClientConfig:
    return ClientConfig({
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS, "ssl.keystore.password": SECRET + "k", "ssl.key.password": SECRET + "p",
        "ssl.truststore.password": SECRET + "t",
    })


def test_secrets_are_redacted_in_repr_str_and_properties():
    c = _everything_secret()
    for text in (repr(c), str(c), str(c.properties()), f"{c!r}"):
        assert SECRET not in text
        assert "[hidden]" in text
    assert c.properties(redact=False)["sasl.jaas.config"] == JAAS
    assert c.redact(f"failed with {SECRET}k and {SECRET}") == "failed with [hidden] and [hidden]"


def test_sasl_password_property_is_redacted():
    c = ClientConfig({"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT",
                      "sasl.username": "bob", "sasl.password": SECRET})
    assert SECRET not in repr(c)
    assert c.sasl_credentials() == ("bob", SECRET)


def test_config_is_immutable_and_picklable():
    c = _everything_secret()
    with pytest.raises(AttributeError):
        c.request_timeout_ms = 5  # type: ignore[misc]
    back = pickle.loads(pickle.dumps(c))
    assert back.sasl_credentials() == ("alice", SECRET)
    assert back.with_overrides({"request.timeout.ms": 7}).request_timeout_ms == 7


def test_properties_file_and_overrides(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# comment\nbootstrap.servers=h:1\nsasl.jaas.config=a.b.PlainLoginModule required \\\n"
                    '   username="u" password="p";\nclient.id : tool\n')
    props = load_properties(str(path))
    assert props["client.id"] == "tool"
    assert props["sasl.jaas.config"] == 'a.b.PlainLoginModule required username="u" password="p";'
    assert parse_overrides(["a=b=c", "x="]) == {"a": "b=c", "x": ""}
    with pytest.raises(ConfigError):
        parse_overrides(["novalue"])

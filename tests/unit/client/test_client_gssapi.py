"""GSSAPI without a KDC: the RFC 4752 security-layer answer, the broker host Java would name, and the
configuration errors a user sees before any connection."""

from __future__ import annotations

import sys

import pytest

from kafka_spark.client.auth.gssapi.credentials import kerberos_login
from kafka_spark.client.auth.gssapi.mechanism import security_layer_reply
from kafka_spark.client.auth.login import login_config
from kafka_spark.errors import AuthenticationError, ConfigError

MODULE = "com.sun.security.auth.module.Krb5LoginModule required"


def _config(jaas: str | None, **extra: str) -> dict[str, str]:
    conf = {"bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.service.name": "kafka", **extra}
    if jaas is not None:
        conf["sasl.jaas.config"] = jaas
    return conf


def test_no_security_layer_size_zero_then_the_authorization_id():
    # the broker offers all three layers and 64 KiB; Kafka clients choose none, so the size is 0 (RFC 4752)
    assert security_layer_reply(b"\x07\x01\x00\x00", "alice@EXAMPLE.COM") == b"\x01\x00\x00\x00alice@EXAMPLE.COM"
    assert security_layer_reply(b"\x01\xff\xff\xff", "") == b"\x01\x00\x00\x00"
    assert security_layer_reply(b"\x05\x00\x00\x00", "b\u00f6b@R") == b"\x01\x00\x00\x00b\xc3\xb6b@R"


@pytest.mark.parametrize("offer", [b"\x02\x00\x10\x00", b"\x06\x00\x10\x00", b"\x00\x00\x00\x00"])
def test_an_offer_without_the_no_layer_option_is_refused(offer):
    with pytest.raises(AuthenticationError, match="integrity/confidentiality"):
        security_layer_reply(offer, "alice@EXAMPLE.COM")


@pytest.mark.parametrize("offer", [b"", b"\x01\x00\x00", b"\x01\x00\x00\x00\x00"])
def test_an_offer_of_another_length_is_refused(offer):
    with pytest.raises(AuthenticationError, match=f"has {len(offer)} bytes, expected 4"):
        security_layer_reply(offer, "x")


def test_the_broker_host_is_named_as_java_names_it():
    from kafka_spark.client.auth.gssapi.mechanism import kerberos_host

    assert kerberos_host("Broker-1.Example.COM") == "broker-1.example.com"
    # an address: its name when that name resolves back to it (here /etc/hosts' localhost, as Java finds)
    assert kerberos_host("127.0.0.1") == "localhost"


def test_the_service_name_is_required():
    conf = _config(f'{MODULE} useTicketCache=true;')
    del conf["sasl.kerberos.service.name"]
    with pytest.raises(ConfigError, match=r"needs sasl\.kerberos\.service\.name"):
        login_config(conf)


def test_a_missing_keytab_is_named_and_its_path_shown(tmp_path):
    missing = tmp_path / "client.keytab"
    with pytest.raises(ConfigError, match=rf"keyTab {missing} does not exist") as info:
        login_config(_config(f'{MODULE} useKeyTab=true keyTab="{missing}" principal="alice@R";'))
    assert "\n" not in str(info.value)


def test_a_keytab_login_needs_the_keytab_and_the_principal(tmp_path):
    keytab = tmp_path / "client.keytab"
    keytab.write_bytes(b"\x05\x02")
    with pytest.raises(ConfigError, match=r"useKeyTab=true needs keyTab="):
        login_config(_config(f'{MODULE} useKeyTab=true principal="alice@R";'))
    with pytest.raises(ConfigError, match=r"useKeyTab=true needs principal="):
        login_config(_config(f'{MODULE} useKeyTab=true keyTab="{keytab}";'))
    with pytest.raises(ConfigError, match=r"is not a file"):
        login_config(_config(f'{MODULE} useKeyTab=true keyTab="{tmp_path}" principal="alice@R";'))
    login = kerberos_login(login_config(_config(f'{MODULE} useKeyTab=true keyTab="{keytab}" principal="alice@R";')))
    assert (login.principal, login.keytab, login.ticket_cache) == ("alice@R", str(keytab), False)


def test_a_password_prompt_cannot_be_served():
    with pytest.raises(ConfigError, match="useKeyTab=true with keyTab and principal, or useTicketCache=true"):
        login_config(_config(f"{MODULE} doNotPrompt=true;"))


def test_ticket_cache_logins(tmp_path):
    cache = kerberos_login(login_config(_config(f'{MODULE} useTicketCache=true ticketCache="{tmp_path}/cc";')))
    assert (cache.principal, cache.keytab, cache.ticket_cache, cache.cache_name) == (None, None, True,
                                                                                      f"{tmp_path}/cc")
    # without sasl.jaas.config: the default ticket cache (kinit's)
    default = kerberos_login(login_config(_config(None)))
    assert (default.keytab, default.ticket_cache, default.cache_name) == (None, True, None)


def test_another_login_module_is_refused():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
    with pytest.raises(ConfigError, match=r"does not serve sasl\.mechanism=GSSAPI"):
        login_config(_config(jaas))


def test_without_the_kerberos_extra_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi now raises ImportError
    with pytest.raises(ConfigError, match=r"needs the gssapi package .*pip install 'kafka-spark\[kerberos\]'"):
        login_config(_config(f"{MODULE} useTicketCache=true;"))

"""The GSSAPI mechanism against a real KDC and a real GSSAPI acceptor playing the broker's part of RFC 4752 (as
Java's GssKrb5Server does): tickets, mutual authentication, the wrapped security-layer step, and the errors of
a login that cannot work."""

from __future__ import annotations

import subprocess
import time

import gssapi
import pytest
from harness.kdc import kerberos_tool
from harness.kerberos_kafka import krb5_login

from kafka_spark.client import ClientConfig
from kafka_spark.client.auth.gssapi.mechanism import gssapi_mechanism
from kafka_spark.errors import AuthenticationError, ConfigError

SERVICE = "exchange"


@pytest.fixture(scope="module")
def service_keytab(kdc, tmp_path_factory):
    """The acceptor's keytab: exchange/localhost, the principal a client connecting to 127.0.0.1 asks for."""
    _, keytab = kdc.principal_with_keytab(f"{SERVICE}/localhost", tmp_path_factory.mktemp("exchange") / "svc.keytab")
    return keytab


def _config(jaas: str, service: str = SERVICE) -> ClientConfig:
    return ClientConfig({"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": service, "sasl.jaas.config": jaas})


def _acceptor(keytab) -> gssapi.SecurityContext:
    creds = gssapi.Credentials(usage="accept", store={"keytab": str(keytab)})
    return gssapi.SecurityContext(creds=creds, usage="accept")


def test_the_whole_exchange_with_a_real_acceptor(alice, service_keytab):
    mechanism = gssapi_mechanism(_config(alice.jaas()), "127.0.0.1")
    broker = _acceptor(service_keytab)
    ap_rep = broker.step(mechanism.first())
    assert broker.complete and str(broker.initiator_name) == alice.principal
    assert str(broker.target_name) == f"{SERVICE}/localhost@{alice.principal.split('@')[1]}"
    # mutual authentication: the broker's AP-REP completes our side, and an empty token asks for the offer
    assert ap_rep and mechanism.respond(ap_rep) == b""
    offer = broker.wrap(b"\x07\x00\x10\x00", False).message  # every layer, 4 KiB
    answer = broker.unwrap(mechanism.respond(offer))
    assert not answer.encrypted
    assert answer.message == b"\x01\x00\x00\x00" + alice.principal.encode()
    assert mechanism.respond(b"") is None  # the broker's final empty answer ends it


def test_a_broker_that_wants_a_security_layer_is_refused(alice, service_keytab):
    mechanism = gssapi_mechanism(_config(alice.jaas()), "127.0.0.1")
    broker = _acceptor(service_keytab)
    assert mechanism.respond(broker.step(mechanism.first())) == b""
    with pytest.raises(AuthenticationError, match="integrity/confidentiality"):
        mechanism.respond(broker.wrap(b"\x04\x00\x10\x00", False).message)


def test_a_service_name_the_kdc_does_not_know(alice):
    mechanism = gssapi_mechanism(_config(alice.jaas(), service="kafka-typo"), "127.0.0.1")
    with pytest.raises(AuthenticationError, match=r"no service principal for kafka-typo@localhost; check "
                                                  r"sasl\.kerberos\.service\.name") as info:
        mechanism.first()
    assert "\n" not in str(info.value)


def test_a_principal_the_keytab_does_not_hold(kdc, alice):
    bob = kdc.add_principal("bob")
    with pytest.raises(ConfigError, match=rf"keyTab {alice.keytab} has no key for principal {bob}"):
        gssapi_mechanism(_config(krb5_login(alice.keytab, bob)), "127.0.0.1")


def test_an_unreachable_kdc(kdc, tmp_path, monkeypatch):
    # a login of its own (a fresh in-memory cache), with a krb5.conf whose KDC port nobody listens on
    principal, keytab = kdc.principal_with_keytab("carol", tmp_path / "carol.keytab")
    from kafka_spark.local.process import free_port

    dead = tmp_path / "krb5.conf"
    dead.write_text(kdc.krb5_conf.read_text().replace(f"127.0.0.1:{kdc.port}", f"127.0.0.1:{free_port()}"))
    monkeypatch.setenv("KRB5_CONFIG", str(dead))
    with pytest.raises(AuthenticationError, match=r"no KDC answered; check the realm's kdc in krb5\.conf") as info:
        gssapi_mechanism(_config(krb5_login(keytab, principal)), "127.0.0.1").first()
    assert "\n" not in str(info.value) and "Cannot contact any KDC" in str(info.value)


def test_an_expired_kinit_ticket_says_to_run_kinit(kdc, alice, tmp_path):
    cache = tmp_path / "ccache"
    subprocess.run([kerberos_tool("kinit"), "-l", "1s", "-k", "-t", str(alice.keytab), "-c", f"FILE:{cache}",
                    alice.principal], env=kdc.env(), check=True, capture_output=True)
    time.sleep(2.1)  # whole seconds: the ticket ends within 2 s of kinit
    jaas = f'com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="{cache}";'
    with pytest.raises(AuthenticationError, match=rf"with ticket cache {cache} failed; run kinit .*"
                                                  r"\(The referenced credential has expired\)"):
        gssapi_mechanism(_config(jaas), "127.0.0.1").first()

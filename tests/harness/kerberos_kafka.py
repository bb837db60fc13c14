"""A Kafka 4.x node with a Kerberos (SASL/GSSAPI) listener, its principal and keytab from a local KDC.

The broker logs in as `kafka/localhost@REALM`: a client that connects to 127.0.0.1 asks for a ticket for
`kafka@<host>` with the address resolved back to a name (Java's `getHostName()`, and this package's client
alike), which is `localhost`. PLAINTEXT stays the inter-broker and admin listener.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.kdc import Kdc
from kafka_spark.local.kafka import KafkaNode, start_kafka

KERBEROS_LISTENER = "SASL_PLAINTEXT_KRB"
KERBEROS_TLS_LISTENER = "SASL_SSL_KRB"
SERVICE_NAME = "kafka"
BROKER_HOST = "localhost"


def krb5_login(keytab: Path, principal: str) -> str:
    """A `sasl.jaas.config` value that logs `principal` in from `keytab`, as a Java client writes it."""
    return (f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
            f'keyTab="{keytab}" principal="{principal}";')


def gssapi_listener_properties(listener: str, keytab: Path, principal: str) -> dict[str, object]:
    """Broker properties that make `listener` (a SASL_PLAINTEXT_* name) a GSSAPI-only listener."""
    prefix = f"listener.name.{listener.lower()}"
    return {
        f"{prefix}.sasl.enabled.mechanisms": "GSSAPI",
        f"{prefix}.gssapi.sasl.jaas.config": krb5_login(keytab, principal),
        "sasl.kerberos.service.name": SERVICE_NAME,
    }


def start_kerberos_kafka(kdc: Kdc, data_dir: Path, extra: dict[str, object] | None = None,
                         listeners: Sequence[str] = (KERBEROS_LISTENER,), timeout: float = 90.0) -> KafkaNode:
    """A single-node Kafka 4.x with PLAINTEXT and GSSAPI `listeners` (SASL_PLAINTEXT_* or SASL_SSL_*, the latter
    with the test CA's certificate) in `kdc`'s realm; `extra` adds broker properties."""
    keytab_dir = data_dir.parent / f"{data_dir.name}-keytabs"
    principal, keytab = kdc.principal_with_keytab(f"{SERVICE_NAME}/{BROKER_HOST}", keytab_dir / "kafka.keytab")
    props: dict[str, object] = {}
    for listener in listeners:
        props.update(gssapi_listener_properties(listener, keytab, principal))
    return start_kafka(data_dir, secure=False, listeners=list(listeners), extra={**props, **(extra or {})},
                       jvm_props=[f"-Djava.security.krb5.conf={kdc.krb5_conf}"], timeout=timeout)

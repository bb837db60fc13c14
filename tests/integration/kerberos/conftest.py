"""Kerberos fixtures: one MIT KDC and one Kafka 4.1 broker with a GSSAPI listener per session, and client
principals with keytabs.

MIT Kerberos finds the KDC through `KRB5_CONFIG`, read from the environment at each use. It is set here, at
collection, before any fixture starts a JVM: Spark's Python workers inherit the environment of Spark's JVM,
which a session fixture may start before the KDC exists. The KDC fixture then writes that file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# krb_logins.py beside this file, importable under --import-mode=importlib
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
from krb_logins import ClientLogin

KRB5_DIR = Path(tempfile.gettempdir()) / f"kafka-spark-kerberos-{os.getpid()}"
os.environ["KRB5_CONFIG"] = str(KRB5_DIR / "krb5.conf")


@pytest.fixture(scope="session")
def kdc() -> Iterator:
    """An MIT KDC on 127.0.0.1 whose krb5.conf is this process's KRB5_CONFIG."""
    from harness.kdc import Kdc

    shutil.rmtree(KRB5_DIR, ignore_errors=True)
    server = Kdc(KRB5_DIR).start()
    assert os.environ["KRB5_CONFIG"] == str(server.krb5_conf)
    yield server
    server.stop()
    shutil.rmtree(KRB5_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def kerberos_kafka(kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Kafka 4.1 with PLAINTEXT and GSSAPI listeners (broker principal kafka/localhost): SASL_PLAINTEXT_KRB, whose
    sessions last 10 minutes (KIP-368: clients re-authenticate before that), and SASL_SSL_KRB."""
    from harness.kerberos_kafka import KERBEROS_LISTENER, KERBEROS_TLS_LISTENER, start_kerberos_kafka

    reauth = f"listener.name.{KERBEROS_LISTENER.lower()}.gssapi.connections.max.reauth.ms"
    node = start_kerberos_kafka(kdc, tmp_path_factory.mktemp("kerberos-kafka"), extra={reauth: 600_000},
                                listeners=(KERBEROS_LISTENER, KERBEROS_TLS_LISTENER))
    yield node
    node.stop()


@pytest.fixture(scope="session")
def alice(kdc) -> ClientLogin:
    """The client principal alice@REALM and its keytab."""
    principal, keytab = kdc.principal_with_keytab("alice", KRB5_DIR / "keytabs" / "alice.keytab")
    return ClientLogin(principal, keytab)

"""The schema-registry client over TLS: the CA bundle, the host name check and its switch, and mTLS with a
client certificate whose key has a password."""

from __future__ import annotations

import datetime
import signal
import time
from pathlib import Path

import pytest
from harness.certs import self_signed
from harness.schema_registry import RegistryServer

from kafka_spark.errors import SchemaRegistryError
from kafka_spark.formats.registry.client import SchemaRegistry
from kafka_spark.formats.registry.settings import registry_settings

KEY_PASSWORD = "key-5ecr3t-0b2"


def _other_name(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the name registry.invalid only: valid, but not for 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "registry.invalid")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("registry.invalid")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    directory.mkdir()
    cert_path, key_path = directory / "other.pem", directory / "other.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def _with_password(key_path: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    locked = key_path.with_suffix(".locked.key")
    locked.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(KEY_PASSWORD.encode())))
    return locked


@pytest.fixture(scope="module")
def server_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="module")
def client_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("client"))


def _registry(url: str, **options: str) -> SchemaRegistry:
    settings = registry_settings({"schema.registry.url": url, "schema.registry.max.retries": "0", **options})
    assert settings is not None
    return SchemaRegistry(settings)


def test_https_with_the_ca_bundle(server_cert: tuple[Path, Path]) -> None:
    with RegistryServer(tls=server_cert) as server:
        assert server.url.startswith("https://")
        assert _registry(server.url, **{"schema.registry.ssl.ca.location": str(server_cert[0])}).subjects() == []
        with pytest.raises(SchemaRegistryError, match=r"GET /subjects at https://127\.0\.0\.1.*TLS failed: "
                                                      "CERTIFICATE_VERIFY_FAILED"):
            _registry(server.url).subjects()  # the system's CAs do not know the test authority


def test_host_name_check_and_its_switch(tmp_path: Path) -> None:
    cert = _other_name(tmp_path / "other")
    with RegistryServer(tls=cert) as server:
        ca = {"schema.registry.ssl.ca.location": str(cert[0])}
        with pytest.raises(SchemaRegistryError, match="TLS failed: CERTIFICATE_VERIFY_FAILED"):
            _registry(server.url, **ca).subjects()
        off = {**ca, "schema.registry.ssl.endpoint.identification.algorithm": ""}
        assert _registry(server.url, **off).subjects() == []


def test_mtls(server_cert: tuple[Path, Path], client_cert: tuple[Path, Path]) -> None:
    with RegistryServer(tls=server_cert, client_ca=client_cert[0], users={"alice": "pw"}) as server:
        base = {"schema.registry.ssl.ca.location": str(server_cert[0]),
                "schema.registry.basic.auth.user.info": "alice:pw"}
        locked = _with_password(client_cert[1])
        mtls = {**base, "schema.registry.ssl.certificate.location": str(client_cert[0]),
                "schema.registry.ssl.key.location": str(locked), "schema.registry.ssl.key.password": KEY_PASSWORD}
        assert _registry(server.url, **mtls).subjects() == []
        with pytest.raises(SchemaRegistryError) as caught:
            _registry(server.url, **base).subjects()  # no client certificate: the server ends the handshake
        assert "GET /subjects" in str(caught.value)
        wrong = {**mtls, "schema.registry.ssl.key.password": "not-the-" + KEY_PASSWORD}
        with pytest.raises(SchemaRegistryError, match=r"TLS settings: schema\.registry\.ssl\.key\.location: "
                                                      r"schema\.registry\.ssl\.key\.password does not decrypt "
                                                      "the private key") as caught:
            _registry(server.url, **wrong).subjects()
        assert KEY_PASSWORD not in str(caught.value)


_NO_PASSWORD = """
import sys
from kafka_spark.formats.registry.client import SchemaRegistry
from kafka_spark.formats.registry.settings import registry_settings

settings = registry_settings({"schema.registry.url": "https://127.0.0.1:9", "schema.registry.max.retries": "0",
                              "schema.registry.ssl.certificate.location": sys.argv[1],
                              "schema.registry.ssl.key.location": sys.argv[2]})
try:
    SchemaRegistry(settings).subjects()
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def test_an_encrypted_key_without_its_password_is_an_error_not_a_prompt(client_cert: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    # Given no password, OpenSSL prompts for one on the controlling terminal and waits. The client runs on a
    # pseudo-terminal of its own here, as a job started from a shell would.
    import os
    import pty
    import select
    import sys

    script = tmp_path / "no_password.py"
    script.write_text(_NO_PASSWORD)
    pid, terminal = pty.fork()
    if pid == 0:  # the child: only exec, nothing of the parent's test machinery
        os.execv(sys.executable, [sys.executable, str(script), str(client_cert[0]),
                                  str(_with_password(client_cert[1]))])
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"pass phrase" not in seen:
            ready, _, _ = select.select([terminal], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(terminal, 4096)
                except OSError:  # the child exited and closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(terminal)
    text = seen.decode(errors="replace")
    assert "pass phrase" not in text, f"OpenSSL prompted on the terminal: {text!r}"
    assert ("SchemaRegistryError: schema registry TLS settings: schema.registry.ssl.key.location: the private key "
            "is encrypted; set schema.registry.ssl.key.password") in text, text

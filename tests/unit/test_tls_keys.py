"""One loader of client certificates and their keys for every TLS client (`kafka_spark.tls_keys`): an encrypted
key without a password is an error naming the setting, never OpenSSL's prompt; a wrong password and a file
without a key are errors naming their settings; the password never shows. Brokers' settings use it as the
schema registry's do."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from harness.certs import self_signed

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.net.tls import ssl_context
from kafka_spark.errors import ConfigError
from kafka_spark.tls_keys import load_key_pair

PASSWORD = "key-5ecr3t-7d1"


class Refused(Exception):
    pass


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(certificate, its key, the key encrypted with PASSWORD)."""
    from cryptography.hazmat.primitives import serialization

    cert, key = self_signed(tmp_path_factory.mktemp("pair"))
    loaded = serialization.load_pem_private_key(key.read_bytes(), None)
    locked = key.with_suffix(".locked.key")
    locked.write_bytes(loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(PASSWORD.encode())))
    return cert, key, locked


def _load(cert: Path, key: Path | None, password: str | None) -> None:
    load_key_pair(ssl.create_default_context(), str(cert), None if key is None else str(key), password,
                  setting="my.key", password_setting="my.key.password", error=Refused)


def test_keys_load_plain_or_with_their_password(pair: tuple[Path, Path, Path]) -> None:
    cert, key, locked = pair
    _load(cert, key, None)
    _load(cert, key, "ignored: the key is not encrypted")
    _load(cert, locked, PASSWORD)


def test_refusals_name_the_settings_and_never_the_password(pair: tuple[Path, Path, Path]) -> None:
    cert, _, locked = pair
    with pytest.raises(Refused, match=r"^my\.key: the private key is encrypted; set my\.key\.password$"):
        _load(cert, locked, None)
    with pytest.raises(Refused, match=r"^my\.key: my\.key\.password does not decrypt the private key$") as caught:
        _load(cert, locked, "not-" + PASSWORD)
    assert PASSWORD not in str(caught.value)
    with pytest.raises(Refused, match=r"^my\.key: cannot load a PEM certificate chain and private key"):
        _load(cert, None, None)  # the certificate file holds no key


def test_the_broker_settings_use_the_same_loader(pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    cert, _, locked = pair
    pem = tmp_path / "client.pem"
    pem.write_text(cert.read_text() + locked.read_text())
    base = {"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.keystore.location": str(pem)}
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location: the private key is encrypted; set "
                                          r"ssl\.key\.password"):
        ssl_context(ClientConfig(base))
    with pytest.raises(ConfigError, match=r"ssl\.key\.password does not decrypt"):
        ssl_context(ClientConfig({**base, "ssl.key.password": "not-" + PASSWORD}))
    assert ssl_context(ClientConfig({**base, "ssl.key.password": PASSWORD})) is not None

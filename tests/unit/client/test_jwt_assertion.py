"""The jwt-bearer grant's client assertion, checked by PyJWT (an independent JOSE library)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_spark.client.auth.oauth.jwt_assertion import AssertionSettings, make_assertion
from kafka_spark.errors import AuthenticationError, ConfigError

jwt = pytest.importorskip("jwt")
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402

NOW = 1_900_000_000.0


def write_key(tmp_path: Path, key, passphrase: bytes | None = None) -> Path:
    encryption = (serialization.BestAvailableEncryption(passphrase) if passphrase
                  else serialization.NoEncryption())
    path = tmp_path / "assertion-key.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return path


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_built_assertions_verify_with_the_public_key(tmp_path: Path, algorithm: str) -> None:
    key = rsa.generate_private_key(65537, 2048) if algorithm == "RS256" else ec.generate_private_key(ec.SECP256R1())
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"header": {"kid": "key-7"}, "payload": {"tenant": "acme", "iat": 1}}))
    settings = AssertionSettings(algorithm=algorithm.lower(), aud="https://idp.example/token", iss="svc-ingest",
                                 sub="svc-ingest", exp_seconds=120, nbf_seconds=30, include_jti=True,
                                 private_key_file=str(write_key(tmp_path, key, b"pass-phrase")),
                                 passphrase="pass-phrase", template_file=str(template))
    assertion = make_assertion(settings, now=NOW)
    assert jwt.get_unverified_header(assertion) == {"kid": "key-7", "alg": algorithm, "typ": "JWT"}
    claims = jwt.decode(assertion, key.public_key(), algorithms=[algorithm], audience="https://idp.example/token",
                        options={"verify_exp": False, "verify_nbf": False, "verify_iat": False})
    # the template's static claims stay, the time claims are always made here
    assert claims["tenant"] == "acme" and claims["iss"] == claims["sub"] == "svc-ingest"
    assert (claims["iat"], claims["exp"], claims["nbf"]) == (int(NOW), int(NOW) + 120, int(NOW) - 30)
    assert len(claims["jti"]) == 36
    assert "pass-phrase" not in repr(settings)


def test_a_ready_assertion_file_is_read_on_every_fetch(tmp_path: Path) -> None:
    path = tmp_path / "assertion.jwt"
    path.write_text("aaa.bbb.ccc\n")
    settings = AssertionSettings(file=str(path), private_key_file="/ignored")
    assert make_assertion(settings) == "aaa.bbb.ccc"
    path.write_text("ddd.eee.fff")
    assert make_assertion(settings) == "ddd.eee.fff"
    path.write_text("not a jwt")
    with pytest.raises(AuthenticationError, match="three dot-separated parts"):
        make_assertion(settings)


def test_bad_settings_name_the_option_and_never_the_key(tmp_path: Path) -> None:
    rsa_key = write_key(tmp_path, rsa.generate_private_key(65537, 2048), b"right")
    with pytest.raises(ConfigError, match=r"private\.key\.file"):
        make_assertion(AssertionSettings())
    with pytest.raises(ConfigError, match="RS256 or ES256"):
        make_assertion(AssertionSettings(algorithm="HS256", private_key_file=str(rsa_key)))
    with pytest.raises(ConfigError, match="passphrase") as wrong:
        make_assertion(AssertionSettings(private_key_file=str(rsa_key), passphrase="wrong"))
    assert "BEGIN" not in str(wrong.value) and "wrong" not in str(wrong.value).replace("passphrase", "")
    with pytest.raises(ConfigError, match="does not match the key"):
        make_assertion(AssertionSettings(algorithm="ES256", private_key_file=str(rsa_key), passphrase="right"))
    with pytest.raises(ConfigError, match="cannot read"):
        make_assertion(AssertionSettings(private_key_file=str(tmp_path / "missing.pem")))

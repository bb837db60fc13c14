"""SCRAM math against the RFC test vectors, and PLAIN tokens."""

from __future__ import annotations

import pytest

from kafka_spark.client.auth.plain_scram import PlainMechanism, ScramMechanism, saslname
from kafka_spark.errors import AuthenticationError


def _exchange(mechanism: str, nonce: str, server_first: str, client_final: str, server_final: str) -> None:
    scram = ScramMechanism(mechanism, "user", "pencil", nonce=nonce)
    assert scram.first() == f"n,,n=user,r={nonce}".encode()
    assert scram.respond(server_first.encode()) == client_final.encode()
    assert scram.respond(server_final.encode()) is None
    assert scram.complete


def test_rfc5802_sha1_vector():
    _exchange("SCRAM-SHA-1", "fyko+d2lbbFgONRv9qkxdawL",
              "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
              "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
              "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")


def test_rfc7677_sha256_vector():
    _exchange("SCRAM-SHA-256", "rOprNGfwEbeRWgbNEkqO",
              "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
              "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
              "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
              "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_wrong_server_signature_is_refused():
    scram = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    scram.respond(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(AuthenticationError, match="does not verify"):
        scram.respond(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")


def test_server_nonce_must_extend_ours_and_errors_are_reported():
    scram = ScramMechanism("SCRAM-SHA-512", "user", "pencil", nonce="abc")
    with pytest.raises(AuthenticationError, match="nonce"):
        scram.respond(b"r=xyz,s=QSXCR+Q6sek8bf92,i=4096")
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        ScramMechanism("SCRAM-SHA-512", "u", "p").respond(b"e=invalid-proof")


def test_names_are_escaped_and_passwords_never_shown():
    assert saslname("a=b,c") == "a=3Db=2Cc"
    assert PlainMechanism("bob", "pw").first() == b"\0bob\0pw"
    assert "pw" not in repr(PlainMechanism("bob", "pw"))
    assert "pencil" not in repr(ScramMechanism("SCRAM-SHA-256", "user", "pencil"))

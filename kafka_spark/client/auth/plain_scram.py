"""SASL mechanisms as token exchanges: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Each mechanism is a small state machine: `first()` gives the initial client token, `respond(server)`
the next one (or None when done); it never does I/O. The connection carries the tokens in
SaslAuthenticate requests (or raw frames after SaslHandshake v0).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import unicodedata

from kafka_spark.errors import AuthenticationError

_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512", "SCRAM-SHA-1": "sha1"}


class PlainMechanism:
    """PLAIN: one token, ``\\0user\\0password``."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password

    def first(self) -> bytes:
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return None

    def __repr__(self) -> str:
        return f"PlainMechanism(username={self._username!r}, password=[hidden])"


def saslname(name: str) -> str:
    """Escape ``=`` and ``,`` in a SCRAM user name (RFC 5802 §5.1)."""
    return name.replace("=", "=3D").replace(",", "=2C")


def salted_password(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2 with HMAC of the mechanism's hash."""
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)


def client_proof(hash_name: str, salted: bytes, auth_message: bytes) -> tuple[bytes, bytes]:
    """(ClientProof, ServerSignature) for a salted password and the SCRAM AuthMessage."""
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    signature = hmac.digest(stored_key, auth_message, hash_name)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.digest(salted, b"Server Key", hash_name)
    return proof, hmac.digest(server_key, auth_message, hash_name)


def _parse_attrs(message: bytes) -> dict[str, str]:
    attrs = {}
    for part in message.decode("utf-8").split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            attrs[key] = value
    return attrs


class ScramMechanism:
    """SCRAM-SHA-256 / SCRAM-SHA-512 client: client-first, client-final, then verify the server signature."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in _SCRAM_HASHES:
            raise AuthenticationError(f"unsupported SCRAM mechanism {mechanism}")
        self.name = mechanism
        self._hash = _SCRAM_HASHES[mechanism]
        self._username = username
        self._password = unicodedata.normalize("NFKC", password)
        self._nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        self._client_first_bare = f"n={saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._done = False

    def first(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(challenge)
        self._verify(challenge)
        return None

    def _client_final(self, server_first: bytes) -> bytes:
        attrs = _parse_attrs(server_first)
        if "e" in attrs:
            raise AuthenticationError(f"{self.name} authentication failed: {attrs['e']}")
        try:
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        except (KeyError, ValueError) as exc:
            raise AuthenticationError(f"{self.name}: malformed server-first message") from exc
        if not nonce.startswith(self._nonce) or iterations < 1:
            raise AuthenticationError(f"{self.name}: server nonce or iteration count is invalid")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first.decode()},{without_proof}".encode()
        salted = salted_password(self._hash, self._password.encode(), salt, iterations)
        proof, self._server_signature = client_proof(self._hash, salted, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: bytes) -> None:
        attrs = _parse_attrs(server_final)
        if "e" in attrs:
            raise AuthenticationError(f"{self.name} authentication failed: {attrs['e']}")
        assert self._server_signature is not None
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), self._server_signature):
            raise AuthenticationError(f"{self.name}: the server's signature does not verify; it may not know "
                                      "the password (possible impostor)")
        self._done = True

    @property
    def complete(self) -> bool:
        """True after the server's final message verified."""
        return self._done

    def __repr__(self) -> str:
        return f"ScramMechanism({self.name}, username={self._username!r}, password=[hidden])"


def make_mechanism(mechanism: str, username: str, password: str) -> PlainMechanism | ScramMechanism:
    """The client side of `mechanism`."""
    if mechanism == "PLAIN":
        return PlainMechanism(username, password)
    return ScramMechanism(mechanism, username, password)

"""OAUTHBEARER's client message (RFC 7628 as Kafka parses it), its error exchange, and Kafka's unsecured tokens."""

from __future__ import annotations

import base64
import json
import re

import pytest

from kafka_spark.client.auth.oauth.oauthbearer import (
    OAuthBearerMechanism,
    check_extensions,
    initial_response,
    jwt_claims,
    unsecured_token,
)
from kafka_spark.errors import ConfigError

# Kafka's server-side grammar of the client message (OAuthBearerClientInitialResponse), written out here
_KEY, _VALUE = r"[A-Za-z]+", r"[\x21-\x7E \t\r\n]+"
_MESSAGE = re.compile(rf"n,(a=[^,]+)?,\x01((?:{_KEY}={_VALUE}\x01)*)\x01")
_AUTH = re.compile(r"(\w+) +([-_.a-zA-Z0-9]+)")


def _pairs(message: bytes) -> dict[str, str]:
    match = _MESSAGE.fullmatch(message.decode())
    assert match, message
    return dict(kv.split("=", 1) for kv in match.group(2).split("\x01") if kv)


def test_initial_response_bytes_without_extensions():
    assert initial_response("aaa.bbb.ccc") == b"n,,\x01auth=Bearer aaa.bbb.ccc\x01\x01"


def test_initial_response_bytes_with_extensions():
    message = initial_response("t.o.k", {"logicalCluster": "lkc-abc", "identityPoolId": "pool-1"})
    assert message == b"n,,\x01auth=Bearer t.o.k\x01identityPoolId=pool-1\x01logicalCluster=lkc-abc\x01\x01"
    pairs = _pairs(message)
    scheme, token = _AUTH.fullmatch(pairs.pop("auth")).groups()  # type: ignore[union-attr]
    assert (scheme, token) == ("Bearer", "t.o.k")
    assert pairs == {"logicalCluster": "lkc-abc", "identityPoolId": "pool-1"}


def test_initial_response_with_an_authorization_id():
    assert initial_response("x.y.z", authzid="alice").startswith(b"n,a=alice,\x01")


@pytest.mark.parametrize("name", ["auth", "bad-name", "with1digit", ""])
def test_bad_extension_names_are_config_errors_naming_the_option(name):
    with pytest.raises(ConfigError, match=re.escape(f"extension_{name}")) as info:
        check_extensions({name: "v"}, "extension_")
    assert "\n" not in str(info.value)


def test_bad_extension_value_is_refused_without_echoing_it():
    with pytest.raises(ConfigError, match="extension_pool") as info:
        check_extensions({"pool": "caf\u00e9-secret"}, "extension_")
    assert "caf\u00e9-secret" not in str(info.value)


def test_mechanism_answers_a_json_error_challenge_with_soh_and_keeps_the_reason():
    mech = OAuthBearerMechanism("a.b.c")
    assert mech.first() == b"n,,\x01auth=Bearer a.b.c\x01\x01"
    assert mech.respond(b"") is None  # success: the broker answers nothing
    refused = OAuthBearerMechanism("a.b.c")
    refused.first()
    challenge = b'{"status":"insufficient_scope", "scope":"kafka"}'
    assert refused.respond(challenge) == b"\x01"
    assert refused.server_error == "status=insufficient_scope, scope=kafka"
    assert refused.respond(b"more") is None
    assert "a.b.c" not in repr(refused)


def _decode(part: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_unsecured_token_claims_and_extensions():
    options = {"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": ",kafka,read",
               "unsecuredLoginNumberClaim_tier": "3", "unsecuredLoginLifetimeSeconds": "120",
               "unsecuredLoginExtension_traceId": "abc"}
    token, expires, extensions = unsecured_token(options, now=1000.0)
    header, payload, signature = token.split(".")
    assert _decode(header) == {"alg": "none"} and signature == ""
    claims = _decode(payload)
    assert claims == {"sub": "alice", "scope": ["kafka", "read"], "tier": 3.0, "iat": 1000.0, "exp": 1120.0}
    assert expires == 1120.0 and extensions == {"traceId": "abc"}
    assert jwt_claims(token) == claims


def test_unsecured_token_with_another_principal_claim():
    token, _, _ = unsecured_token({"unsecuredLoginPrincipalClaimName": "user",
                                   "unsecuredLoginStringClaim_user": "bob"}, now=0.0)
    assert jwt_claims(token)["user"] == "bob"


@pytest.mark.parametrize(("options", "message"), [
    ({"unsecuredLoginStringClaim_scope": "kafka"}, "unsecuredLoginStringClaim_sub"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_exp": "5"}, "'exp' claim"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "soon"}, "LifetimeSeconds"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_n": "x"}, "unsecuredLoginNumberClaim_n"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginExtension_auth": "x"}, "unsecuredLoginExtension_auth"),
])
def test_unsecured_token_errors_name_the_option(options, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        unsecured_token(options)


@pytest.mark.parametrize(("value", "items"), [(",a,b", ["a", "b"]), ("|a||b||", ["a", "", "b"]), (",", [""])])
def test_list_claims_split_as_java_does(value, items):
    token, _, _ = unsecured_token({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginListClaim_l": value}, now=0)
    assert jwt_claims(token)["l"] == items


def test_jwt_claims_of_something_else_is_empty():
    assert jwt_claims("opaque-token") == {}
    assert jwt_claims("a.!!!.c") == {}

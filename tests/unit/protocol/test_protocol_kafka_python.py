"""Cross-check against kafka-python (an independent codec): same requests encode to the same bytes,
and responses encoded by kafka-python decode to the same values here."""

from __future__ import annotations

import random

import pytest
from kafka_python_oracle import max_version, oracle_class, oracle_object, our_name
from protocol_values import combos, message, random_body

from kafka_spark.protocol import decode_body, encode_body, encode_request, request_header_version

SHARED = [(k, v, kind) for k, v, kind in combos() if v <= max_version(k)]
VALUES_PER_COMBO = 8


def _check_names(api_key: int, version: int, kind: str) -> None:
    """Every field we declare for `version` exists in kafka-python's declaration, and vice versa."""
    ours = {f.name for f in message(api_key, kind).fields if version in f.versions}
    kstruct = oracle_class(api_key, kind)._struct
    theirs = {our_name(n, ours) for n, f in kstruct.fields.items() if f.for_version_q(version)}
    assert ours == theirs


@pytest.mark.parametrize(("api_key", "version", "kind"), [c for c in SHARED if c[2] == "request"])
def test_requests_encode_identically(api_key: int, version: int, kind: str) -> None:
    _check_names(api_key, version, kind)
    fields = message(api_key, kind).fields
    rng = random.Random(f"kp/{api_key}/{version}")
    for i in range(VALUES_PER_COMBO):
        value = random_body(api_key, version, kind, rng, unknown_tags=False)
        theirs = oracle_object(api_key, version, kind, fields, value)
        assert encode_body(api_key, version, kind, value) == bytes(theirs.encode(version=version))
        if i == 0:
            # with header and size prefix too: the header version must agree
            theirs.with_header(correlation_id=99, client_id="cli")
            ours = encode_request(api_key, version, 99, "cli", value)
            assert ours == bytes(theirs.encode(version=version, header=True, framed=True)), (
                f"header v{request_header_version(api_key, version)}"
            )


@pytest.mark.parametrize(("api_key", "version", "kind"), [c for c in SHARED if c[2] == "response"])
def test_responses_from_kafka_python_decode_to_the_same_values(api_key: int, version: int, kind: str) -> None:
    _check_names(api_key, version, kind)
    fields = message(api_key, kind).fields
    rng = random.Random(f"kp/{api_key}/{version}/r")
    for _ in range(VALUES_PER_COMBO):
        value = random_body(api_key, version, kind, rng, unknown_tags=False)
        data = bytes(oracle_object(api_key, version, kind, fields, value).encode(version=version))
        assert decode_body(api_key, version, kind, data) == value


def test_every_declared_version_is_cross_checked() -> None:
    # kafka-python declares at least the versions Kafka 4.1 serves for every API we speak
    assert len(SHARED) == len(list(combos()))

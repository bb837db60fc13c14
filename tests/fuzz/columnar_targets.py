"""Fuzz target of the column-wise payload decoders that parse bytes themselves (Protobuf through ptars, JSON
Schema through msgspec): a group of payloads decoded column-wise and per record. Registered in targets.py.

columnar: header byte (bit 0: JSON Schema, else Protobuf; bits 1-3: which `from_protobuf` option set), then the
payloads, each a 2-byte big-endian length and its bytes (the last one takes what is left). The column-wise path
may take any of them, and must then give exactly the per-record path's value (else AssertionError, a finding),
or leave them; it may raise nothing but KafkaSparkError.
"""

from __future__ import annotations

import functools
import random
import struct
import sys
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import pyarrow as pa  # noqa: E402
from google.protobuf import message_factory  # noqa: E402

from kafka_spark.errors import PayloadError  # noqa: E402
from kafka_spark.formats.groups import Group  # noqa: E402
from kafka_spark.formats.protobuf.schema import message_indexes  # noqa: E402
from kafka_spark.formats.registry.wire import frame  # noqa: E402

_MAX_PAYLOADS = 64


@functools.cache
def _decoder(json_schema: bool, options: int) -> Any:
    if json_schema:
        from unit.formats.json_random import decoder

        return decoder()
    from unit.formats.protobuf_random import OPTION_SETS, decoder

    return decoder(OPTION_SETS[options % len(OPTION_SETS)])


def columnar_seeds(rng: random.Random) -> list[bytes]:
    from unit.formats import json_random, protobuf_random

    out = []
    for options in range(len(protobuf_random.OPTION_SETS)):
        cls = message_factory.GetMessageClass(_decoder(False, options).descriptor)
        clean = [protobuf_random.message(cls, rng).SerializeToString() for _ in range(6)]
        payloads = [protobuf_random.mutate(p, rng.choice(clean), rng.choice(protobuf_random.MUTATIONS), rng)
                    for p in clean]
        out.append(_input(False, options, payloads))
    for _ in range(4):
        out.append(_input(True, 0, [json_random.payload(rng) for _ in range(6)]))
    return out


def _input(json_schema: bool, options: int, payloads: list[bytes]) -> bytes:
    body = b"".join(struct.pack(">H", min(len(p), 0xFFFF)) + p[:0xFFFF] for p in payloads)
    return bytes([(options << 1) | int(json_schema)]) + body


def _payloads(body: bytes) -> list[bytes]:
    out, at = [], 0
    while at + 2 <= len(body) and len(out) < _MAX_PAYLOADS:
        size = struct.unpack_from(">H", body, at)[0]
        out.append(body[at + 2:at + 2 + size])
        at += 2 + size
    return out


def run_columnar(data: bytes) -> object:
    if not data:
        return None
    json_schema, options = bool(data[0] & 1), (data[0] >> 1) & 7
    payloads = _payloads(data[1:])
    if not payloads:
        return None
    dec = _decoder(json_schema, options)
    indexes = () if json_schema else message_indexes(dec.descriptor)
    group = Group(1, () if json_schema else indexes, 5 + (0 if json_schema else 1 + len(indexes)))
    if json_schema:
        from kafka_spark.formats.json_schema.columnar import decode_group
    else:
        from kafka_spark.formats.protobuf.columnar import decode_group
    framed = pa.array([frame(1, p, None if json_schema else indexes) for p in payloads], pa.binary())
    found = decode_group(dec, group, framed)
    if found is None:
        return None
    exact, values = found
    taken = [p for p, x in zip(payloads, exact.tolist(), strict=True) if x]
    expected = []
    for p in taken:
        try:
            expected.append(dec.decode(1, indexes, p))
        except PayloadError as exc:
            raise AssertionError(f"taken column-wise, refused per record ({exc}): {p!r}") from None
    # repr: -0.0 against 0.0, NaN against NaN
    if repr(values.to_pylist()) != repr(pa.array(expected, type=dec.arrow_type).to_pylist()):
        raise AssertionError(f"column-wise values differ from the per-record path's for {taken!r}")
    return values

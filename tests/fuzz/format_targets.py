"""Fuzz targets of the payload formats' outer edges: the schema registry's HTTP answers as the client reads them,
and JSON Schema payloads nested around Python's recursion limit. Registered in targets.py.

registry-http: one real HTTP server on 127.0.0.1 answers every request with the input's status and body
(header: which client call, which status, what size: as given, padded to the client's cap or one byte past
it, or a declared length past it; then a schema id for the calls that take one). The call must return a
value of the right shape or raise SchemaRegistryError.

json-schema-depth: a JSON Schema value whose free-form field nests from 100 levels below to 100 above what the
recursion limit leaves at the decoder (900 to 1100 with the default limit; header: flags, depth, extra stack
frames under the decoder; the rest is what sits at the innermost level), decoded with and without validation
and encoded back. Each must give a value or PayloadError.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import random
import struct
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from kafka_spark.formats.json_schema.codec import json_schema_decoder, json_schema_encoder
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.registry.client import MAX_ANSWER_BYTES, SchemaRegistry
from kafka_spark.formats.registry.settings import RegistrySettings

# ---- the registry's answers ---------------------------------------------------------------------------

_STATUSES = (200, 200, 200, 200, 404, 409, 422, 401, 403, 301, 429, 500, 503)
_SCHEMA = RegisteredSchema('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}')
_MAX_ID = 2**31 - 1


class _Answer:
    status = 200
    body = b""
    declared: int | None = None


class _Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(_Answer.status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        if _Answer.declared is not None:
            self.send_header("Content-Length", str(_Answer.declared))
        self.end_headers()  # HTTP/1.0: without a length the body ends with the connection
        with contextlib.suppress(OSError):  # the client stopped reading at its cap
            self.wfile.write(_Answer.body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


_server: list[str] = []


def _url() -> str:
    if not _server:
        server = _Server(("127.0.0.1", 0), _Handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        _server.append(f"http://127.0.0.1:{server.server_address[1]}")
    return _server[0]


def _schema_shape(found: Any) -> None:
    if not isinstance(found, RegisteredSchema) or not isinstance(found.schema, str):
        raise AssertionError(f"not a schema: {found!r:.200}")
    if found.schema_type not in ("AVRO", "PROTOBUF", "JSON"):
        raise AssertionError(f"schema type {found.schema_type!r}")
    if found.id is not None:
        _id_shape(found.id)
    versioned = found.subject is not None and found.version is not None
    if (found.subject is None) != (found.version is None) or (versioned and (
            not isinstance(found.subject, str) or not isinstance(found.version, int) or found.version < 1)):
        raise AssertionError(f"subject {found.subject!r} version {found.version!r}")
    for ref in found.references:
        if not (isinstance(ref, SchemaReference) and isinstance(ref.name, str) and isinstance(ref.subject, str)
                and isinstance(ref.version, int) and not isinstance(ref.version, bool) and ref.version >= 1):
            raise AssertionError(f"reference {ref!r:.200}")
    hash(found)  # clients keep schemas in dicts and sets


def _id_shape(value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_ID:
        raise AssertionError(f"schema id {value!r:.100}")


def _list_shape(found: Any, kind: type) -> None:
    if not isinstance(found, list) or not all(isinstance(x, kind) and not isinstance(x, bool) for x in found):
        raise AssertionError(f"not a list of {kind.__name__}: {found!r:.200}")


def _pairs_shape(found: Any) -> None:
    if not isinstance(found, list) or not all(
            isinstance(s, str) and isinstance(v, int) and not isinstance(v, bool) for s, v in found):
        raise AssertionError(f"not (subject, version) pairs: {found!r:.200}")


def _lookup_shape(found: Any) -> None:
    if found is not None:
        _schema_shape(found)


def _bool_shape(found: Any) -> None:
    if not isinstance(found, bool):
        raise AssertionError(f"not a bool: {found!r:.100}")


# (call, check of what it returned), by the input's first byte
_CALLS: list[tuple[Callable[[SchemaRegistry, int], Any], Callable[[Any], None]]] = [
    (lambda c, i: c.by_id(i), _schema_shape),
    (lambda c, i: c.latest("orders-value"), _schema_shape),
    (lambda c, i: c.version("orders-value", 3), _schema_shape),
    (lambda c, i: c.subjects(), lambda found: _list_shape(found, str)),
    (lambda c, i: c.versions("orders-value"), lambda found: _list_shape(found, int)),
    (lambda c, i: c.subject_versions(i), _pairs_shape),
    (lambda c, i: c.register("orders-value", _SCHEMA), _id_shape),
    (lambda c, i: c.lookup("orders-value", _SCHEMA), _lookup_shape),
    (lambda c, i: c.compatible("orders-value", _SCHEMA), _bool_shape),
]


def registry_seeds(rng: random.Random) -> list[bytes]:
    schema = json.dumps(_SCHEMA.schema)
    ref = '{"name": "shop.Money", "subject": "money-value", "version": 2}'
    bodies = {
        0: [f'{{"schema": {schema}}}', f'{{"schema": {schema}, "schemaType": "JSON", "references": [{ref}]}}',
            f'{{"schema": {schema}, "id": 2147483647}}', f'{{"schema": {schema}, "id": 1e400}}'],
        1: [f'{{"subject": "orders-value", "id": 7, "version": 3, "schema": {schema}}}',
            f'{{"subject": "orders-value", "id": 7, "version": 3, "schema": {schema}, "schemaType": "PROTOBUF"}}'],
        2: [f'{{"subject": "orders-value", "id": 7, "version": 3, "schema": {schema}, "references": [{ref}]}}'],
        3: ['["orders-value", "payments-value"]', "[]"],
        4: ["[1, 2, 3]", "[2147483647]"],
        5: ['[{"subject": "orders-value", "version": 1}, {"subject": "archive-value", "version": 4}]'],
        6: ['{"id": 12}', '{"id": 0}'],
        7: [f'{{"subject": "orders-value", "id": 7, "version": 3, "schema": {schema}}}'],
        8: ['{"is_compatible": true}', '{"is_compatible": false, "messages": ["x"]}'],
    }
    errors = ['{"error_code": 40403, "message": "Schema 7 not found"}', '{"error_code": 50001, "message": "down"}',
              "<html>Bad gateway</html>", ""]
    out = []
    for call, texts in bodies.items():
        for text in texts:
            out.append(_registry_input(call, 0, 0, rng.randrange(1 << 31), text.encode()))
        status = rng.randrange(4, len(_STATUSES))
        out.append(_registry_input(call, status, 0, 7, rng.choice(errors).encode()))
    # answers at the client's cap, one byte past it, and declared past it
    out += [_registry_input(3, 0, 13, 0, b'["a"]'), _registry_input(3, 0, 14, 0, b'["a"]'),
            _registry_input(0, 0, 15, 1, b"{}"), _registry_input(3, 0, 0, 0, b"[" * 5000 + b"]" * 5000)]
    return out


def _registry_input(call: int, status: int, size: int, schema_id: int, body: bytes) -> bytes:
    return bytes([call, status, size]) + struct.pack(">i", schema_id - (1 << 32) * (schema_id > _MAX_ID)) + body


def run_registry(data: bytes) -> object:
    """Serve the input's answer and make the input's call: a value of the right shape or SchemaRegistryError."""
    if len(data) < 7:
        return None
    call, check = _CALLS[data[0] % len(_CALLS)]
    (schema_id,) = struct.unpack_from(">i", data, 3)
    body, size = data[7:], data[2] % 16
    _Answer.status, _Answer.declared = _STATUSES[data[1] % len(_STATUSES)], None
    if size == 13:
        body = body[:MAX_ANSWER_BYTES].ljust(MAX_ANSWER_BYTES)
    elif size == 14:
        body = body.ljust(MAX_ANSWER_BYTES + 1)
    elif size == 15:
        _Answer.declared = MAX_ANSWER_BYTES + 1 + len(body)
    _Answer.body = body
    client = SchemaRegistry(RegistrySettings(urls=(_url(),), max_retries=0, timeout_ms=5000))
    found = call(client, schema_id)
    if size in (14, 15):
        raise AssertionError(f"an answer past the client's cap of {MAX_ANSWER_BYTES} bytes was read")
    check(found)
    return found


# ---- JSON Schema nesting around the recursion limit ---------------------------------------------------

_FREE = {"type": "object", "properties": {"free": {}, "list": {"type": "array", "items": {}}}}
_READER = RegisteredSchema(json.dumps(_FREE), "JSON", (), 1)
_CODECS: list[Any] = []


class _Source:
    def by_id(self, schema_id: int) -> RegisteredSchema:
        return _READER

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        raise AssertionError("no references")


def depth_seeds(rng: random.Random) -> list[bytes]:
    out = []
    for flags in (0, 1, 2, 3, 5, 6, 0x21, 0x42, 0xF3, 0x17):
        for depth in (0, 84, 86, 88, 90, 91, 92, 93, 94, 100, 200):
            out.append(bytes([flags]) + struct.pack(">H", depth) + rng.choice([b"", b"1", b'"x"', b"{}", b"[]"]))
    return out


def run_depth(data: bytes) -> object:
    """Decode (with and without validation) and encode a value nested around the recursion limit, from a stack
    deepened by up to 120 frames; each must give a value or PayloadError."""
    if len(data) < 3:
        return None
    if not _CODECS:
        _CODECS.extend([json_schema_decoder(_READER, _Source(), {"validate": "true"}),
                        json_schema_decoder(_READER, _Source(), {"validate": "false"}),
                        json_schema_encoder(_READER, _Source(), {"validate": "true"})])
    flags, (offset,), inner = data[0], struct.unpack_from(">H", data, 1), data[3:]
    # around the nesting the recursion limit leaves from here, so that a saved input hits the same spot under
    # any runner: 900 to 1100 levels with the default limit
    depth = _headroom() - 100 + offset % 201
    if flags & 6 == 0:
        nest = b"[" * depth + inner + b"]" * depth
    elif flags & 6 == 2:
        nest = b'{"a":' * depth + (inner or b"null") + b"}" * depth
    elif flags & 6 == 4:
        nest = b'[{"a":' * (depth // 2) + (inner or b"0") + b"}]" * (depth // 2)
    else:
        nest = inner
    payload = b'{"free":' + nest + b"}" if not flags & 8 else b'{"list":[' + nest + b"]}"
    decoder = _CODECS[flags & 1]
    value = _deeper((flags >> 4) * 8, lambda: decoder.decode(1, (), payload))
    text = nest.decode("utf-8", "replace")
    return value, _deeper((flags >> 4) * 8, lambda: _CODECS[2].encode({"free": text}))


def _headroom() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return sys.getrecursionlimit() - depth


def _deeper(frames: int, fn: Callable[[], Any]) -> Any:
    return fn() if frames <= 0 else _deeper(frames - 1, fn)

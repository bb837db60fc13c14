"""A Confluent-compatible schema registry for tests, in memory, on 127.0.0.1 and a free port.

It serves the REST endpoints clients use (schemas by id, subjects and versions, register, look up, soft and
permanent deletes, compatibility, config, mode) with Confluent's error codes, optional basic or bearer auth,
TLS and mTLS, and fault injection. Schemas are validated on registration: AVRO with fastavro, JSON with
jsonschema's meta-schema check, PROTOBUF as base64 FileDescriptorProto (what Confluent's Python serializer
registers) or .proto text compiled with protoc. Compatibility: AVRO by Avro's resolution rules
(`avro_compatibility`); PROTOBUF and JSON only by their schema type not changing under a subject, their
contents accepted at every level. Schemas are returned as registered; `?format=serialized` turns .proto
text into a base64 FileDescriptorProto, as Confluent's Protobuf deserializer asks. This module serves the
endpoints; the subjects, versions and their rules are registry_state.py's.
"""

from __future__ import annotations

import base64
import collections
import http.server
import json
import re
import ssl
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from harness.avro_compatibility import LEVELS
from harness.registry_state import CONTENT_TYPE, FAULT_CODES, TYPES, RegistryError, RegistryState

# ---- HTTP ------------------------------------------------------------------------------------------

_S = "([^/]+)"
_ROUTES: list[tuple[str, re.Pattern[str], str]] = [(m, re.compile(f"^{p}$"), f) for m, p, f in (
    ("GET", r"/schemas/ids/(\d+)", "get_schema"),
    ("GET", r"/schemas/ids/(\d+)/schema", "get_schema_text"),
    ("GET", r"/schemas/ids/(\d+)/versions", "get_schema_versions"),
    ("GET", r"/schemas/ids/(\d+)/subjects", "get_schema_subjects"),
    ("GET", r"/schemas/types", "get_types"),
    ("GET", r"/subjects", "get_subjects"),
    ("GET", f"/subjects/{_S}/versions", "get_versions"),
    ("GET", f"/subjects/{_S}/versions/{_S}", "get_version"),
    ("GET", f"/subjects/{_S}/versions/{_S}/schema", "get_version_text"),
    ("GET", f"/subjects/{_S}/versions/{_S}/referencedby", "get_referenced_by"),
    ("POST", f"/subjects/{_S}/versions", "post_register"),
    ("POST", f"/subjects/{_S}", "post_lookup"),
    ("DELETE", f"/subjects/{_S}", "delete_subject"),
    ("DELETE", f"/subjects/{_S}/versions/{_S}", "delete_version"),
    ("POST", f"/compatibility/subjects/{_S}/versions/{_S}", "post_compatibility"),
    ("POST", f"/compatibility/subjects/{_S}/versions", "post_compatibility_all"),
    ("GET", "/config", "get_config"), ("PUT", "/config", "put_config"),
    ("GET", f"/config/{_S}", "get_config"), ("PUT", f"/config/{_S}", "put_config"),
    ("DELETE", f"/config/{_S}", "delete_config"),
    ("GET", "/mode", "get_mode"), ("PUT", "/mode", "put_mode"),
    ("GET", f"/mode/{_S}", "get_mode"), ("PUT", f"/mode/{_S}", "put_mode"),
)]


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "").lower() == "true"


class _Api:
    """The endpoints: each takes the decoded path parameters, the query and the JSON body, and answers JSON."""

    def __init__(self, state: RegistryState) -> None:
        self.state = state

    def get_schema(self, q: dict[str, str], body: Any, schema_id: str) -> Any:
        return self.state.body(int(schema_id), q.get("format"))

    def get_schema_text(self, q: dict[str, str], body: Any, schema_id: str) -> Any:
        return _Raw(self.state.schema(int(schema_id))["schema"])

    def get_schema_versions(self, q: dict[str, str], body: Any, schema_id: str) -> Any:
        return self.state.versions_of(int(schema_id))

    def get_schema_subjects(self, q: dict[str, str], body: Any, schema_id: str) -> Any:
        return sorted({item["subject"] for item in self.state.versions_of(int(schema_id))})

    def get_types(self, q: dict[str, str], body: Any) -> Any:
        return list(TYPES)

    def get_subjects(self, q: dict[str, str], body: Any) -> Any:
        deleted = _flag(q, "deleted")
        return sorted(s for s, vs in self.state.subjects.items() if any(deleted or not v.deleted for v in vs))

    def get_versions(self, q: dict[str, str], body: Any, subject: str) -> Any:
        return [v.version for v in self.state.live(subject, _flag(q, "deleted"))]

    def get_version(self, q: dict[str, str], body: Any, subject: str, version: str) -> Any:
        v = self.state.version(subject, version, _flag(q, "deleted"))
        return self.state.answer(subject, v, q.get("format"))

    def get_version_text(self, q: dict[str, str], body: Any, subject: str, version: str) -> Any:
        return _Raw(self.state.schema(self.state.version(subject, version).id)["schema"])

    def get_referenced_by(self, q: dict[str, str], body: Any, subject: str, version: str) -> Any:
        number = self.state.version(subject, version).version
        return [i + 1 for i, s in enumerate(self.state.schemas)
                if any(r["subject"] == subject and r["version"] == number for r in s["references"])]

    def post_register(self, q: dict[str, str], body: Any, subject: str) -> Any:
        return {"id": self.state.register(subject, _request(body))}

    def post_lookup(self, q: dict[str, str], body: Any, subject: str) -> Any:
        return self.state.lookup(subject, _request(body), _flag(q, "deleted"))

    def delete_subject(self, q: dict[str, str], body: Any, subject: str) -> Any:
        return self.state.delete_subject(subject, _flag(q, "permanent"))

    def delete_version(self, q: dict[str, str], body: Any, subject: str, version: str) -> Any:
        return self.state.delete_version(subject, version, _flag(q, "permanent"))

    def post_compatibility(self, q: dict[str, str], body: Any, subject: str, version: str) -> Any:
        new = self.state.validated(_request(body))
        if subject not in self.state.subjects and version in ("latest", "-1"):
            return {"is_compatible": True}
        old = self.state.schemas[self.state.version(subject, version).id - 1]
        level = self.state.level(subject).removesuffix("_TRANSITIVE")  # one version: never transitive
        return _verdict(self.state.problems(level, new, [old]), _flag(q, "verbose"))

    def post_compatibility_all(self, q: dict[str, str], body: Any, subject: str) -> Any:
        new = self.state.validated(_request(body))
        previous = [self.state.schemas[v.id - 1] for v in self.state.subjects.get(subject, []) if not v.deleted]
        return _verdict(self.state.problems(self.state.level(subject), new, previous), _flag(q, "verbose"))

    def get_config(self, q: dict[str, str], body: Any, subject: str | None = None) -> Any:
        if subject is not None and subject not in self.state.config and not _flag(q, "defaultToGlobal"):
            raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility "
                                            "configured")
        return {"compatibilityLevel": self.state.config.get(subject, self.state.config[None])}

    def put_config(self, q: dict[str, str], body: Any, subject: str | None = None) -> Any:
        level = str((body or {}).get("compatibility", "")).upper()
        if level not in LEVELS:
            raise RegistryError(422, 42203, f"Invalid compatibility level. Valid values are {', '.join(LEVELS)}")
        self.state.config[subject] = level
        return {"compatibility": level}

    def delete_config(self, q: dict[str, str], body: Any, subject: str) -> Any:
        previous = self.get_config(q, body, subject)
        del self.state.config[subject]
        return previous

    def get_mode(self, q: dict[str, str], body: Any, subject: str | None = None) -> Any:
        return {"mode": self.state.mode.get(subject, self.state.mode[None])}

    def put_mode(self, q: dict[str, str], body: Any, subject: str | None = None) -> Any:
        mode = str((body or {}).get("mode", "")).upper()
        if mode not in ("READWRITE", "READONLY", "IMPORT"):
            raise RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT")
        self.state.mode[subject] = mode
        return {"mode": mode}


class _Raw(str):
    """An answer sent as it is (the schema text endpoints), not as a JSON string."""


def _request(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RegistryError(422, 42201, "Invalid schema: the request body is not a JSON object")
    return body


def _verdict(problems: list[str], verbose: bool) -> dict[str, Any]:
    return {"is_compatible": not problems, **({"messages": problems} if verbose else {})}


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, in the request's thread, not in the accepting one

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        owner = self.server.owner
        parts = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parts.query).items()}
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner.lock:
            owner.requests[parts.path] += 1
            fault = owner.take_fault(parts.path)
        if fault is not None:
            status = fault
            answer: Any = {"error_code": FAULT_CODES.get(status, status), "message": f"injected HTTP {status}"}
        elif not owner.authorized(self.headers.get("Authorization")):
            status, answer = 401, {"error_code": 40101, "message": "Unauthorized"}
        else:
            status, answer = self._route(method, parts.path, query, raw)
        self._reply(status, answer)

    def _route(self, method: str, path: str, query: dict[str, str], raw: bytes) -> tuple[int, Any]:
        owner = self.server.owner
        allowed = False
        for route_method, pattern, name in _ROUTES:
            match = pattern.match(path)
            if not match:
                continue
            allowed = True
            if route_method != method:
                continue
            try:
                body = json.loads(raw) if raw else None
                with owner.lock:
                    return 200, getattr(owner.api, name)(query, body, *map(urllib.parse.unquote, match.groups()))
            except RegistryError as exc:
                return exc.status, {"error_code": exc.code, "message": exc.message}
            except ValueError as exc:
                return 400, {"error_code": 400, "message": f"Bad request: {exc}"}
        if allowed:
            return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}

    def _reply(self, status: int, answer: Any) -> None:
        data = answer.encode() if isinstance(answer, _Raw) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="SchemaRegistry"')
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    owner: RegistryServer
    context: ssl.SSLContext | None = None

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # refused handshakes and dropped clients are the tests' business, not noise


class RegistryServer:
    """The registry, started and stopped as a context manager; `url` is its base URL.

    `users` (name -> password) and `token` (a static bearer token) turn on authentication: any other request
    gets 401 with error code 40101. `tls` is (certificate, key) to serve HTTPS; `client_ca` then requires
    client certificates signed by it. `requests` counts requests per path; `fail_next` injects errors.
    """

    def __init__(self, users: dict[str, str] | None = None, token: str | None = None,
                 tls: tuple[Path, Path] | None = None, client_ca: Path | None = None) -> None:
        self.users = dict(users or {})
        self.token = token
        self.tls = tls
        self.client_ca = client_ca
        self.lock = threading.RLock()
        self.state = RegistryState()
        self.api = _Api(self.state)
        self.requests: collections.Counter[str] = collections.Counter()
        self._faults: list[tuple[int, str | None]] = []
        self._server: _HttpServer | None = None
        self.url = ""

    def __enter__(self) -> RegistryServer:
        server = _HttpServer(("127.0.0.1", 0), _Handler)
        server.owner = self
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            if self.client_ca:
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(self.client_ca)
            server.context = context
        threading.Thread(target=server.serve_forever, args=(0.05,), name="schema-registry", daemon=True).start()
        self._server = server
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{server.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def fail_next(self, n: int, status: int = 500, path: str | None = None) -> None:
        """Answer the next `n` requests (to `path` only, when given) with `status` and Confluent's error body."""
        with self.lock:
            self._faults += [(status, path)] * n

    def take_fault(self, path: str) -> int | None:
        for i, (status, where) in enumerate(self._faults):
            if where is None or where == path:
                del self._faults[i]
                return status
        return None

    def authorized(self, header: str | None) -> bool:
        if not self.users and self.token is None:
            return True
        scheme, _, value = (header or "").partition(" ")
        if scheme.lower() == "bearer":
            return self.token is not None and value == self.token
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(value).decode().partition(":")
            except ValueError:
                return False
            return user in self.users and self.users[user] == password
        return False

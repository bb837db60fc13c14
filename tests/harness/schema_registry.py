"""A Confluent-compatible schema registry for tests, in memory, on 127.0.0.1 and a free port.

It serves the REST endpoints clients use (schemas by id, subjects and versions, register, look up, soft and
permanent deletes, compatibility, config, mode) with Confluent's error codes, optional basic or bearer auth,
TLS and mTLS, and fault injection. Schemas are validated on registration: AVRO with fastavro, JSON with
jsonschema's meta-schema check, PROTOBUF as base64 FileDescriptorProto (what Confluent's Python serializer
registers) or .proto text compiled with protoc. Compatibility: AVRO by Avro's resolution rules
(`avro_compatibility`); PROTOBUF and JSON only by their schema type not changing under a subject, their
contents accepted at every level. Schemas are returned as registered; `?format=serialized` turns .proto
text into a base64 FileDescriptorProto, as Confluent's Protobuf deserializer asks.
"""

from __future__ import annotations

import base64
import collections
import http.server
import json
import re
import ssl
import tempfile
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.avro_compatibility import LEVELS, incompatibilities

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_TYPES = ("AVRO", "PROTOBUF", "JSON")
_MAX_VERSION = 2**31 - 1
# the error codes Confluent's registry gives for these statuses when a test injects them
_FAULT_CODES = {401: 40101, 403: 40301, 429: 42901, 500: 50001, 502: 50003, 503: 50003}


class RegistryError(Exception):
    """An error answer: HTTP status, Confluent error code, message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _subject_missing(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def _invalid(message: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {message}")


@dataclass
class _Version:
    version: int
    id: int
    deleted: bool = False


class RegistryState:
    """The registry's data and rules, without HTTP. Every method runs under the server's lock."""

    def __init__(self) -> None:
        self.schemas: list[dict[str, Any]] = []  # id - 1 -> {"schema", "schemaType", "references"}
        self.ids: dict[tuple[str, str, str], int] = {}  # (type, canonical text, references) -> id
        self.subjects: dict[str, list[_Version]] = {}
        self.config: dict[str | None, str] = {None: "BACKWARD"}
        self.mode: dict[str | None, str] = {None: "READWRITE"}

    # ---- schemas --------------------------------------------------------------------------------

    def schema(self, schema_id: int) -> dict[str, Any]:
        if not 1 <= schema_id <= len(self.schemas):
            raise RegistryError(404, 40403, f"Schema {schema_id} not found")
        return self.schemas[schema_id - 1]

    def versions_of(self, schema_id: int) -> list[dict[str, Any]]:
        self.schema(schema_id)
        return [{"subject": s, "version": v.version} for s, vs in sorted(self.subjects.items())
                for v in vs if v.id == schema_id and not v.deleted]

    def live(self, subject: str, deleted: bool = False) -> list[_Version]:
        versions = [v for v in self.subjects.get(subject, []) if deleted or not v.deleted]
        if not versions:
            raise _subject_missing(subject)
        return versions

    def version(self, subject: str, text: str, deleted: bool = False) -> _Version:
        versions = self.live(subject, deleted)
        if text in ("latest", "-1"):
            return versions[-1]
        number = _version_number(text)
        for v in versions:
            if v.version == number:
                return v
        raise RegistryError(404, 40402, f"Version {number} not found.")

    def answer(self, subject: str, v: _Version, fmt: str | None = None) -> dict[str, Any]:
        return {"subject": subject, "version": v.version, "id": v.id, **self.body(v.id, fmt)}

    def body(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        """The schema as Confluent answers it: schemaType left out for AVRO, references only when there are any."""
        stored = self.schema(schema_id)
        out: dict[str, Any] = {"schema": stored["schema"]}
        if stored["schemaType"] != "AVRO":
            out["schemaType"] = stored["schemaType"]
        if stored["schemaType"] == "PROTOBUF" and fmt == "serialized" and not _is_descriptor(stored["schema"]):
            out["schema"] = base64.b64encode(self._proto(stored).SerializeToString()).decode()
        if stored["references"]:
            out["references"] = stored["references"]
        return out

    # ---- registering --------------------------------------------------------------------------------

    def register(self, subject: str, request: dict[str, Any]) -> int:
        if self.mode.get(subject, self.mode[None]) == "READONLY":
            raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode")
        new = self.validated(request)
        key = _key(new)
        existing = self.subjects.get(subject, [])
        for v in existing:
            if not v.deleted and _key(self.schemas[v.id - 1]) == key:
                return v.id
        live = [self.schemas[v.id - 1] for v in existing if not v.deleted]
        problems = self.problems(self.level(subject), new, live)
        if problems:
            raise RegistryError(409, 409, f"Schema being registered is incompatible with an earlier schema for "
                                          f"subject \"{subject}\", details: {problems}")
        schema_id = self.ids.get(key)
        if schema_id is None:
            self.schemas.append(new)
            schema_id = self.ids[key] = len(self.schemas)
        number = max((v.version for v in existing), default=0) + 1
        self.subjects.setdefault(subject, []).append(_Version(number, schema_id))
        return schema_id

    def lookup(self, subject: str, request: dict[str, Any], deleted: bool) -> dict[str, Any]:
        key = _key(self.validated(request))
        for v in self.live(subject, deleted):
            if _key(self.schemas[v.id - 1]) == key:
                return self.answer(subject, v)
        raise RegistryError(404, 40403, "Schema not found")

    def level(self, subject: str) -> str:
        return self.config.get(subject, self.config[None])

    def problems(self, level: str, new: dict[str, Any], previous: list[dict[str, Any]]) -> list[str]:
        """Why `new` may not follow `previous` (oldest first) at `level`."""
        if level == "NONE" or not previous:
            return []
        if any(p["schemaType"] != new["schemaType"] for p in previous):
            return [f"the schema type changed to {new['schemaType']}"]
        if new["schemaType"] != "AVRO":
            return []
        return incompatibilities(level, self._avro(new), [self._avro(p) for p in previous])

    def validated(self, request: dict[str, Any]) -> dict[str, Any]:
        text, kind = request.get("schema"), request.get("schemaType") or "AVRO"
        if not isinstance(text, str):
            raise _invalid("the request has no schema string")
        if kind not in _TYPES:
            raise RegistryError(422, 42201, f"Invalid schema type {kind}")
        references = []
        for ref in request.get("references") or []:
            try:
                name, subject, version = str(ref["name"]), str(ref["subject"]), int(ref["version"])
                self.version(subject, str(version))
            except (KeyError, TypeError, ValueError, RegistryError) as exc:
                raise _invalid(f"reference {ref!r} cannot be resolved ({exc})") from None
            references.append({"name": name, "subject": subject, "version": version})
        schema = {"schema": text, "schemaType": kind, "references": references}
        try:
            if kind == "AVRO":
                self._avro(schema)
            elif kind == "JSON":
                _check_json(text)
            elif not _is_descriptor(text):
                self._proto(schema)
        except RegistryError:
            raise
        except Exception as exc:  # each library's own error says what is wrong
            raise _invalid(f"{type(exc).__name__}: {exc}") from None
        return schema

    def _referenced(self, schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(name, schema) of every schema `schema` references, dependencies first."""
        out: list[tuple[str, dict[str, Any]]] = []
        for ref in schema["references"]:
            found = self.schemas[self.version(ref["subject"], str(ref["version"]), deleted=True).id - 1]
            out += [*self._referenced(found), (ref["name"], found)]
        return out

    def _avro(self, schema: dict[str, Any]) -> Any:
        import fastavro

        named: dict[str, Any] = {}
        for _, ref in self._referenced(schema):
            fastavro.parse_schema(json.loads(ref["schema"]), named_schemas=named)
        return fastavro.parse_schema(json.loads(schema["schema"]), named_schemas=named)

    def _proto(self, schema: dict[str, Any]) -> Any:
        """The FileDescriptorProto of a .proto text schema, compiled by protoc with its references beside it."""
        import importlib.resources

        from google.protobuf import descriptor_pb2
        from grpc_tools import protoc  # type: ignore[import-untyped]

        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            known = descriptor_pb2.FileDescriptorSet()
            for name, ref in self._referenced(schema):
                if _is_descriptor(ref["schema"]):
                    known.file.add().MergeFromString(base64.b64decode(ref["schema"]))
                    known.file[-1].name = name
                else:
                    (root / name).parent.mkdir(parents=True, exist_ok=True)
                    (root / name).write_text(ref["schema"])
            (root / "schema.proto").write_text(schema["schema"])
            args = ["protoc", f"-I{root}", f"-I{importlib.resources.files('grpc_tools') / '_proto'}",
                    f"--descriptor_set_out={root / 'out.pb'}"]
            if known.file:
                (root / "known.pb").write_bytes(known.SerializeToString())
                args.append(f"--descriptor_set_in={root / 'known.pb'}")
            if protoc.main([*args, "schema.proto"]) != 0:
                raise _invalid("protoc cannot compile the .proto text")
            out = descriptor_pb2.FileDescriptorSet.FromString((root / "out.pb").read_bytes())
        return out.file[-1]

    # ---- deleting -------------------------------------------------------------------------------

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        versions = self.subjects.get(subject)
        if not versions:
            raise _subject_missing(subject)
        if permanent:
            if any(not v.deleted for v in versions):
                raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                                "permanently deleted")
            del self.subjects[subject]
            return [v.version for v in versions]
        live = [v for v in versions if not v.deleted]
        if not live:
            raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true to "
                                            "delete permanently")
        for v in live:
            v.deleted = True
        return [v.version for v in live]

    def delete_version(self, subject: str, text: str, permanent: bool) -> int:
        v = self.version(subject, text, deleted=True)
        if permanent:
            if not v.deleted:
                raise RegistryError(404, 40407, f"Subject '{subject}' Version {v.version} was not deleted first "
                                                "before being permanently deleted")
            self.subjects[subject].remove(v)
            if not self.subjects[subject]:
                del self.subjects[subject]
        elif v.deleted:
            raise RegistryError(404, 40406, f"Subject '{subject}' Version {v.version} was soft deleted. Set "
                                            "permanent=true to delete permanently")
        else:
            v.deleted = True
        return v.version


def _version_number(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= _MAX_VERSION:
        raise RegistryError(422, 42202, f"The specified version '{text}' is not a valid version id. Allowed "
                                        "values are between [1, 2^31-1] and the string \"latest\"")
    return number


def _is_descriptor(text: str) -> bool:
    """Whether `text` is a base64 FileDescriptorProto rather than .proto text."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        raw = base64.b64decode(text, validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (ValueError, DecodeError):
        return False
    return bool(raw) and bool(proto.name or proto.message_type or proto.enum_type)


def _check_json(text: str) -> None:
    import jsonschema

    document = json.loads(text)
    if not isinstance(document, (dict, bool)):
        raise _invalid("a JSON Schema is an object or a boolean")
    jsonschema.validators.validator_for(document).check_schema(document)


def _key(schema: dict[str, Any]) -> tuple[str, str, str]:
    """What makes two registrations the same schema: type, text (whitespace aside for JSON forms), references."""
    text = schema["schema"]
    if schema["schemaType"] != "PROTOBUF":
        text = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return schema["schemaType"], text, json.dumps(schema["references"], sort_keys=True)


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
        return list(_TYPES)

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
            answer: Any = {"error_code": _FAULT_CODES.get(status, status), "message": f"injected HTTP {status}"}
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
        self.send_header("Content-Type", _CONTENT_TYPE)
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

"""The schema-registry client: Confluent's REST API over the standard library's HTTP, with failover across
URLs, retries with backoff, and a per-process cache of immutable schemas shared by every task."""

from __future__ import annotations

import base64
import http.client
import json
import logging
import random
import ssl
import threading
import time
import urllib.parse
from typing import Any

from kafka_spark.errors import SchemaRegistryError
from kafka_spark.formats.cache import BoundedCache
from kafka_spark.formats.model import RegisteredSchema, SchemaReference, SchemaType
from kafka_spark.formats.registry.settings import (
    CERTIFICATE_OPTION,
    KEY_OPTION,
    KEY_PASSWORD_OPTION,
    RegistrySettings,
)
from kafka_spark.tls_keys import load_key_pair

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = f"{CONTENT_TYPE}, application/vnd.schemaregistry+json, application/json"
_TYPES: tuple[SchemaType, ...] = ("AVRO", "PROTOBUF", "JSON")
_NOT_FOUND = (40401, 40403)
# A registry's error message longer than this is cut in ours.
_MESSAGE_LIMIT = 500
# The largest answer read. Schemas are rarely above a megabyte (Confluent keeps each in a Kafka record); the
# cap leaves room for big ones and for long subject lists, and bounds what a broken or hostile server costs.
MAX_ANSWER_BYTES = 16 << 20
_MAX_ID = 2**31 - 1


class SchemaRegistry:
    """A Confluent-compatible schema registry: schemas by id and by subject version (both cached for the life of
    the process, as they never change), the latest version (never cached), registration and compatibility.

    Thread-safe. Share one per settings through `registry_for`; pickling one gives the shared instance of the
    process that unpickles it.
    """

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._by_id: BoundedCache[int, RegisteredSchema] = BoundedCache()
        self._by_version: BoundedCache[tuple[str, int], RegisteredSchema] = BoundedCache()
        self._registered: BoundedCache[tuple[str, str, str, tuple[SchemaReference, ...], bool], int] = BoundedCache()
        self._context: ssl.SSLContext | None = None
        self._headers = _headers(settings)

    def __reduce__(self) -> tuple[Any, tuple[RegistrySettings]]:
        return registry_for, (self.settings,)

    def __repr__(self) -> str:
        return f"SchemaRegistry({', '.join(self.settings.urls)})"

    # ---- SchemaSource ---------------------------------------------------------------------------

    def by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema registered under `schema_id`; SchemaRegistryError(error_code=40403) when there is none."""
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        path = f"/schemas/ids/{int(schema_id)}"
        schema = _schema(self._request("GET", path), f"GET {path}", schema_id=schema_id)
        return self._by_id.put(schema_id, schema)

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        """The schema at `reference.subject`, version `reference.version`."""
        return self.version(reference.subject, reference.version)

    # ---- subjects and versions ------------------------------------------------------------------

    def latest(self, subject: str) -> RegisteredSchema:
        """The latest version under `subject`, asked of the registry on every call."""
        path = f"/subjects/{_quote(subject)}/versions/latest"
        schema = _schema(self._request("GET", path), f"GET {path}", subject=subject)
        self._remember(schema)
        return schema

    def version(self, subject: str, version: int) -> RegisteredSchema:
        """Version `version` (1, 2, ...) of `subject`."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"a subject version is an integer from 1, not {version!r}")
        cached = self._by_version.get((subject, version))
        if cached is not None:
            return cached
        path = f"/subjects/{_quote(subject)}/versions/{version}"
        schema = _schema(self._request("GET", path), f"GET {path}", subject=subject)
        self._remember(schema)
        return schema

    def subjects(self) -> list[str]:
        """Every subject (soft-deleted ones excluded)."""
        return [_text(s, "GET /subjects", "subject") for s in _list(self._request("GET", "/subjects"), "GET /subjects")]

    def versions(self, subject: str) -> list[int]:
        """The versions registered under `subject`."""
        path = f"/subjects/{_quote(subject)}/versions"
        return [_number(v, f"GET {path}", "version") for v in _list(self._request("GET", path), f"GET {path}")]

    def subject_versions(self, schema_id: int) -> list[tuple[str, int]]:
        """Every (subject, version) that holds the schema `schema_id`."""
        path = f"/schemas/ids/{int(schema_id)}/versions"
        request = f"GET {path}"
        items = _list(self._request("GET", path), request)
        if not all(isinstance(item, dict) for item in items):
            raise SchemaRegistryError(f"schema registry {request}: expected a list of objects in the answer")
        return [(_text(item.get("subject"), request, "subject"), _number(item.get("version"), request, "version"))
                for item in items]

    # ---- writing and checking -------------------------------------------------------------------

    def register(self, subject: str, schema: RegisteredSchema, normalize: bool = False) -> int:
        """The id of `schema` under `subject`, registering it as a new version when it is not there yet."""
        key = (subject, schema.schema, schema.schema_type, schema.references, normalize)
        cached = self._registered.get(key)
        if cached is not None:
            return cached
        path = f"/subjects/{_quote(subject)}/versions"
        body = self._request("POST", path, _request_body(schema), {"normalize": "true"} if normalize else None)
        if not isinstance(body, dict) or "id" not in body:
            raise SchemaRegistryError(f"schema registry POST {path}: the answer has no schema id")
        return self._registered.put(key, _number(body["id"], f"POST {path}", "schema id"))

    def lookup(self, subject: str, schema: RegisteredSchema) -> RegisteredSchema | None:
        """`schema` as registered under `subject` (with its id and version); None when it is not there."""
        path = f"/subjects/{_quote(subject)}"
        try:
            body = self._request("POST", path, _request_body(schema))
        except SchemaRegistryError as exc:
            if exc.error_code in _NOT_FOUND:
                return None
            raise
        found = _schema(body, f"POST {path}", subject=subject)
        self._remember(found)
        return found

    def compatible(self, subject: str, schema: RegisteredSchema, version: int | str = "latest") -> bool:
        """Whether the registry would accept `schema` under `subject` against `version` by the subject's
        compatibility level."""
        path = f"/compatibility/subjects/{_quote(subject)}/versions/{_quote(str(version))}"
        body = self._request("POST", path, _request_body(schema))
        if not isinstance(body, dict) or not isinstance(body.get("is_compatible"), bool):
            raise SchemaRegistryError(f"schema registry POST {path}: unexpected answer")
        return bool(body["is_compatible"])

    # ---- caching --------------------------------------------------------------------------------

    def _remember(self, schema: RegisteredSchema) -> None:
        if schema.id is not None:
            self._by_id.put(schema.id, RegisteredSchema(schema.schema, schema.schema_type, schema.references,
                                                        schema.id))
        if schema.subject is not None and schema.version is not None:
            self._by_version.put((schema.subject, schema.version), schema)

    # ---- HTTP -----------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 query: dict[str, str] | None = None) -> Any:
        """The decoded JSON answer of `method path`, trying every URL in order, then again after a backoff, up
        to max.retries times; connection failures, timeouts, 429 and 5xx move on, other errors are final."""
        settings = self.settings
        data = json.dumps(body).encode() if body is not None else None
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = f"{method} {path}"
        last = ""
        status: int | None = None
        code: int | None = None
        for attempt in range(settings.max_retries + 1):
            if attempt:
                delay = _backoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms, attempt)
                log.info("schema registry %s failed (%s); retry %d in %.2fs", request, last, attempt, delay)
                time.sleep(delay)
            for url in settings.urls:
                try:
                    status, answer = self._send(url, method, target, data)
                except ssl.SSLError as exc:
                    # a refused certificate will not be accepted on a retry
                    raise SchemaRegistryError(f"schema registry {request} at {url}: TLS failed: "
                                              f"{exc.reason or exc}") from None
                except (OSError, http.client.HTTPException) as exc:
                    last, status, code = f"{url}: {_describe(exc)}", None, None
                    continue
                if 200 <= status < 300:
                    return _json(answer, request, status)
                code, message = _error_body(answer)
                if status == 429 or status >= 500:
                    last = f"{url}: HTTP {status}{f' error {code}' if code else ''}: {message}"
                    continue
                raise SchemaRegistryError(_refusal(request, status, code, message, "Authorization" in self._headers),
                                          status, code)
        raise SchemaRegistryError(f"schema registry {request} failed after {settings.max_retries + 1} "
                                  f"round(s) over {len(settings.urls)} URL(s); last: {last}", status, code)

    def _send(self, url: str, method: str, target: str, data: bytes | None) -> tuple[int, bytes]:
        parts = urllib.parse.urlsplit(url)
        timeout = self.settings.timeout_ms / 1000
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout,
                                                     context=self._ssl())
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        try:
            connection.request(method, parts.path + target, body=data, headers=headers)
            response = connection.getresponse()
            # at most one byte past the cap: enough to tell, and a hostile or broken server cannot fill memory
            declared = response.length
            answer = b"" if declared is not None and declared > MAX_ANSWER_BYTES else response.read(
                MAX_ANSWER_BYTES + 1)
            if len(answer) > MAX_ANSWER_BYTES or (declared is not None and declared > MAX_ANSWER_BYTES):
                raise SchemaRegistryError(f"schema registry {method} {target.partition('?')[0]} at {url}: the answer "
                                          f"is larger than {MAX_ANSWER_BYTES} bytes (16 MiB), the most this client "
                                          "reads", response.status)
            return response.status, answer
        finally:
            connection.close()

    def _ssl(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                self._context = _ssl_context(self.settings)
            return self._context


_registries: dict[RegistrySettings, SchemaRegistry] = {}
_registries_lock = threading.Lock()


def registry_for(settings: RegistrySettings) -> SchemaRegistry:
    """The process's one client for `settings`, so that every task in an executor shares its cache."""
    with _registries_lock:
        registry = _registries.get(settings)
        if registry is None:
            registry = _registries[settings] = SchemaRegistry(settings)
        return registry


def _headers(settings: RegistrySettings) -> dict[str, str]:
    headers = {"Accept": _ACCEPT}
    if settings.username is not None:
        pair = f"{settings.username}:{settings.password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    elif settings.bearer_token is not None:
        headers["Authorization"] = "Bearer " + settings.bearer_token
        # Confluent Cloud routes OAuth requests by these
        if settings.logical_cluster:
            headers["target-sr-cluster"] = settings.logical_cluster
        if settings.identity_pool_id:
            headers["Confluent-Identity-Pool-Id"] = settings.identity_pool_id
    return headers


def _ssl_context(settings: RegistrySettings) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=settings.ca_location)
        context.check_hostname = settings.check_hostname
        if settings.certificate_location:
            load_key_pair(context, settings.certificate_location, settings.key_location, settings.key_password,
                          setting=KEY_OPTION if settings.key_location else CERTIFICATE_OPTION,
                          password_setting=KEY_PASSWORD_OPTION, error=_tls_settings_error)
    except (OSError, ssl.SSLError) as exc:
        # the message names files, never the key password
        raise SchemaRegistryError(f"schema registry TLS settings: cannot load the CA "
                                  f"({settings.ca_location or 'system default'}) or client certificate "
                                  f"({settings.certificate_location or 'none'}): {_describe(exc)}") from None
    return context


def _tls_settings_error(message: str) -> SchemaRegistryError:
    return SchemaRegistryError(f"schema registry TLS settings: {message}")


def _backoff(base_ms: int, max_ms: int, attempt: int) -> float:
    """Seconds before round `attempt` (1-based): doubling from `base_ms`, capped at `max_ms`, ±20 % jitter."""
    raw = min(base_ms * 2 ** min(attempt - 1, 30), max_ms)
    return raw * random.uniform(0.8, 1.2) / 1000


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _json(answer: bytes, request: str, status: int) -> Any:
    if not answer:
        return None
    try:
        return json.loads(answer)
    except (ValueError, RecursionError):
        raise SchemaRegistryError(f"schema registry {request}: the answer is not JSON", status) from None


def _error_body(answer: bytes) -> tuple[int | None, str]:
    try:
        body = json.loads(answer)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict):
        code = body.get("error_code")
        message = body.get("message")
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        return code, (message if isinstance(message, str) else "")[:_MESSAGE_LIMIT]
    return None, answer[:_MESSAGE_LIMIT].decode("utf-8", "replace").strip()


def _refusal(request: str, status: int, code: int | None, message: str, authenticated: bool) -> str:
    detail = f"HTTP {status}{f' error {code}' if code else ''}" + (f": {message}" if message else "")
    if status == 401 and not authenticated:
        return (f"schema registry {request}: the registry wants credentials and none are set "
                f"(schema.registry.basic.auth.user.info or schema.registry.bearer.auth.token) ({detail})")
    if status == 401:
        return f"schema registry {request}: the registry refused the credentials ({detail})"
    if status == 403:
        return f"schema registry {request}: the credentials are not allowed this request ({detail})"
    return f"schema registry {request}: {detail}"


def _list(body: Any, request: str) -> list[Any]:
    if not isinstance(body, list):
        raise SchemaRegistryError(f"schema registry {request}: expected a list in the answer")
    return body


def _request_body(schema: RegisteredSchema) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": schema.schema}
    if schema.schema_type != "AVRO":  # as Confluent's clients do: older registries know no schemaType
        body["schemaType"] = schema.schema_type
    if schema.references:
        body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                              for r in schema.references]
    return body


def _schema(body: Any, request: str, schema_id: int | None = None, subject: str | None = None) -> RegisteredSchema:
    """A RegisteredSchema from the registry's JSON (`schemaType` absent means AVRO)."""
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
        raise SchemaRegistryError(f"schema registry {request}: the answer holds no schema")
    kind = body.get("schemaType") or "AVRO"
    if kind not in _TYPES:
        raise SchemaRegistryError(f"schema registry {request}: schema type {str(kind)[:40]!r} is not one of "
                                  f"{', '.join(_TYPES)}")
    references = body.get("references") or []
    if not isinstance(references, list) or not all(isinstance(r, dict) for r in references):
        raise SchemaRegistryError(f"schema registry {request}: malformed references")
    found_id = body.get("id", schema_id)
    version = body.get("version")
    found_subject = body.get("subject", subject)
    versioned = version is not None and found_subject is not None
    return RegisteredSchema(
        schema=body["schema"], schema_type=kind,
        references=tuple(SchemaReference(_text(r.get("name"), request, "reference name"),
                                         _text(r.get("subject"), request, "reference subject"),
                                         _number(r.get("version"), request, "reference version", low=1))
                         for r in references),
        id=None if found_id is None else _number(found_id, request, "schema id"),
        subject=_text(found_subject, request, "subject") if versioned else None,
        version=_number(version, request, "version", low=1) if versioned else None)


def _number(value: Any, request: str, what: str, low: int = 0) -> int:
    """`value` when it is an integer a schema id or version can be (JSON's, not a string, a float or a boolean)."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= _MAX_ID:
        return value
    shown = repr(value) if isinstance(value, (int, float, bool)) or value is None else type(value).__name__
    raise SchemaRegistryError(f"schema registry {request}: the answer's {what} is {shown[:40]}, not an integer from "
                              f"{low} to {_MAX_ID}")


def _text(value: Any, request: str, what: str) -> str:
    if isinstance(value, str):
        return value
    raise SchemaRegistryError(f"schema registry {request}: the answer's {what} is {type(value).__name__}, not a "
                              "string")

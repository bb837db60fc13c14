"""What the schema-registry client does with answers a registry should not give: larger than it reads (declared,
or endless), or of the wrong shape (ids that are not integers, subjects that are not strings, nesting deeper
than JSON is parsed). Each is a typed SchemaRegistryError, read in bounded memory, served by a real HTTP
server."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_spark.errors import SchemaRegistryError
from kafka_spark.formats.model import RegisteredSchema
from kafka_spark.formats.registry.client import MAX_ANSWER_BYTES, SchemaRegistry
from kafka_spark.formats.registry.settings import RegistrySettings

CHUNK = 1 << 20


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each path from the server's script: (status, body, declared length or None, times to send)."""

    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        status, body, declared, repeat = self.server.script[self.path.partition("?")[0]]
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        if declared is not None:
            self.send_header("Content-Length", str(declared))
        self.end_headers()  # HTTP/1.0 without a length: the body ends when the connection closes
        sent = 0
        try:
            for _ in range(repeat):
                self.wfile.write(body)
                sent += len(body)
        except OSError:
            pass  # the client stopped reading
        finally:
            self.server.sent.append(sent)

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    script: dict[str, tuple[int, bytes, int | None, int]]
    sent: list[int]


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server(("127.0.0.1", 0), _Scripted)
    running.script, running.sent = {}, []
    threading.Thread(target=running.serve_forever, args=(0.05,), daemon=True).start()
    yield running
    running.shutdown()
    running.server_close()


def _client(server: _Server) -> SchemaRegistry:
    return SchemaRegistry(RegistrySettings(urls=(f"http://127.0.0.1:{server.server_address[1]}",), max_retries=0,
                                           timeout_ms=10_000))


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_an_answer_of_the_cap_is_read_and_one_byte_more_is_refused_naming_url_and_cap(server: _Server) -> None:
    server.script["/subjects"] = (200, b"[" + b" " * (MAX_ANSWER_BYTES - 2) + b"]", None, 1)
    assert _client(server).subjects() == []
    server.script["/subjects"] = (200, b"[" + b" " * (MAX_ANSWER_BYTES - 1) + b"]", None, 1)
    with pytest.raises(SchemaRegistryError, match=f"GET /subjects at {_url(server)}: the answer is larger than "
                                                  f"{MAX_ANSWER_BYTES} bytes \\(16 MiB\\)"):
        _client(server).subjects()


def test_an_endless_answer_is_read_no_further_than_the_cap(server: _Server) -> None:
    # 96 MiB of a valid answer: a client without a cap reads it all (and would read for ever, were it endless)
    server.script["/subjects"] = (200, b" " * CHUNK, None, 96)
    started = time.monotonic()
    with pytest.raises(SchemaRegistryError, match="larger than"):
        _client(server).subjects()
    assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10
    while not server.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.sent and server.sent[0] < 48 * CHUNK  # the cap, plus what the sockets' buffers held


def test_a_declared_length_past_the_cap_is_refused_before_reading(server: _Server) -> None:
    server.script["/schemas/ids/1"] = (200, b'{"schema": "\\"long\\""}', 1 << 40, 1)
    with pytest.raises(SchemaRegistryError, match=r"GET /schemas/ids/1 at .*larger than 16777216 bytes"):
        _client(server).by_id(1)
    server.script["/schemas/ids/2"] = (500, b"x" * CHUNK, MAX_ANSWER_BYTES + 1, 17)
    with pytest.raises(SchemaRegistryError, match="larger than"):  # error answers are capped alike
        _client(server).by_id(2)


SCHEMA = '"schema": "\\"long\\""'
_AVRO = RegisteredSchema('"long"')


@pytest.mark.parametrize(("path", "answer", "call", "reason"), [
    ("/schemas/ids/1", f'{{{SCHEMA}, "id": 1e400}}', lambda c: c.by_id(1), "schema id is inf"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "id": 1.5}}', lambda c: c.by_id(1), "schema id is 1.5"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "id": true}}', lambda c: c.by_id(1), "schema id is True"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "id": "1"}}', lambda c: c.by_id(1), "schema id is str"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "id": 2147483648}}', lambda c: c.by_id(1), "from 0 to 2147483647"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "references": "shop.Money"}}', lambda c: c.by_id(1), "malformed references"),
    ("/schemas/ids/1", f'{{{SCHEMA}, "references": [{{"name": "a", "subject": "s", "version": 0}}]}}',
     lambda c: c.by_id(1), "reference version is 0"),
    ("/subjects/s/versions/latest", f'{{{SCHEMA}, "id": 3, "subject": ["s"], "version": 1}}',
     lambda c: c.latest("s"), "subject is list"),
    ("/subjects/s/versions/latest", f'{{{SCHEMA}, "id": 3, "subject": "s", "version": -1}}',
     lambda c: c.latest("s"), "version is -1"),
    ("/subjects/s/versions", '[1, "2"]', lambda c: c.versions("s"), "version is str"),
    ("/subjects/s/versions", "[1, 1e400]", lambda c: c.versions("s"), "version is inf"),
    ("/subjects", '["a", {"b": 1}]', lambda c: c.subjects(), "subject is dict"),
    ("/schemas/ids/1/versions", '[{"subject": "s", "version": 1.0}]', lambda c: c.subject_versions(1),
     "version is 1.0"),
    ("/schemas/ids/1/versions", '["s"]', lambda c: c.subject_versions(1), "a list of objects"),
    ("/subjects/s/versions", '{"id": -5}', lambda c: c.register("s", _AVRO), "schema id is -5"),
    ("/subjects", "[" * 100_000 + "]" * 100_000, lambda c: c.subjects(), "not JSON"),
])
def test_answers_of_the_wrong_shape_are_typed_errors(server: _Server, path: str, answer: str, call: Any,
                                                     reason: str) -> None:
    server.script[path] = (200, answer.encode(), None, 1)
    with pytest.raises(SchemaRegistryError, match=reason):
        call(_client(server))


def test_an_error_answer_nested_too_deep_is_still_the_registry_s_refusal(server: _Server) -> None:
    server.script["/schemas/ids/9"] = (404, b"[" * 100_000, None, 1)
    with pytest.raises(SchemaRegistryError, match="HTTP 404") as caught:
        _client(server).by_id(9)
    assert caught.value.status == 404

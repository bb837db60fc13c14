"""The schema-registry client against the test registry over HTTP: every call, caching proven by the server's
request counter, typed errors, authentication, failover, retries and timeouts."""

from __future__ import annotations

import json
import pickle
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from harness.schema_registry import RegistryServer

from kafka_spark.errors import SchemaRegistryError
from kafka_spark.formats.model import RegisteredSchema, SchemaReference
from kafka_spark.formats.registry.client import SchemaRegistry, registry_for
from kafka_spark.formats.registry.settings import RegistrySettings, registry_settings

PASSWORD = "reg-5ecr3t-3f1"
TOKEN = "bearer-5ecr3t-a09"


def _avro(*fields: tuple[object, ...]) -> RegisteredSchema:
    """A record shop.User with (name, type) or (name, type, default) fields."""
    body = [{"name": f[0], "type": f[1], **({"default": f[2]} if len(f) == 3 else {})} for f in fields]
    return RegisteredSchema(json.dumps({"type": "record", "name": "User", "namespace": "shop", "fields": body}))


USER_V1 = _avro(("name", "string"))
USER_V2 = _avro(("name", "string"), ("age", "int", 0))


def _settings(*urls: str, **more: object) -> RegistrySettings:
    defaults: dict[str, object] = {"max_retries": 0, "retry_backoff_ms": 5, "retry_backoff_max_ms": 20,
                                   "timeout_ms": 5000}
    return RegistrySettings(urls=urls, **{**defaults, **more})  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[RegistryServer]:
    with RegistryServer(users={"alice": PASSWORD}) as running:
        yield running


@pytest.fixture
def client(server: RegistryServer) -> SchemaRegistry:
    return SchemaRegistry(_settings(server.url, username="alice", password=PASSWORD))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_every_call(client: SchemaRegistry) -> None:
    first = client.register("users-value", USER_V1)
    second = client.register("users-value", USER_V2)
    assert (first, second) == (1, 2)
    assert client.subjects() == ["users-value"]
    assert client.versions("users-value") == [1, 2]
    latest = client.latest("users-value")
    assert latest == RegisteredSchema(USER_V2.schema, "AVRO", (), 2, "users-value", 2)
    assert client.version("users-value", 1) == RegisteredSchema(USER_V1.schema, "AVRO", (), 1, "users-value", 1)
    assert client.by_id(2) == RegisteredSchema(USER_V2.schema, "AVRO", (), 2)
    assert client.by_reference(SchemaReference("shop.User", "users-value", 1)).schema == USER_V1.schema
    assert client.lookup("users-value", USER_V1) == RegisteredSchema(USER_V1.schema, "AVRO", (), 1, "users-value", 1)
    assert client.subject_versions(1) == [("users-value", 1)]
    assert client.compatible("users-value", _avro(("name", "string"), ("age", "int", 0), ("city", "string", "")))
    assert not client.compatible("users-value", _avro(("name", "string"), ("city", "string")))
    assert client.compatible("users-value", _avro(("name", "string"), ("city", "string")), version=1) is False


def test_register_is_idempotent_and_ids_are_global(server: RegistryServer, client: SchemaRegistry) -> None:
    schema_id = client.register("users-value", USER_V1)
    assert client.register("users-value", USER_V1) == schema_id
    assert server.requests["/subjects/users-value/versions"] == 1  # the second answer came from the cache
    # another client (no cache): the registry itself answers the same id and adds no version
    other = SchemaRegistry(client.settings)
    spaced = RegisteredSchema(json.dumps(json.loads(USER_V1.schema), indent=2))
    assert other.register("users-value", spaced) == schema_id
    assert other.versions("users-value") == [1]
    # the same schema under another subject keeps its global id
    assert other.register("archive-value", USER_V1) == schema_id
    assert sorted(other.subject_versions(schema_id)) == [("archive-value", 1), ("users-value", 1)]
    assert other.register("users-value", USER_V1, normalize=True) == schema_id


def test_lookup_of_missing_schema_or_subject_is_none(client: SchemaRegistry) -> None:
    client.register("users-value", USER_V1)
    assert client.lookup("users-value", USER_V2) is None
    assert client.lookup("nobody-value", USER_V1) is None


def test_typed_not_found_errors(client: SchemaRegistry) -> None:
    with pytest.raises(SchemaRegistryError, match=r"GET /schemas/ids/42: HTTP 404 error 40403: Schema 42 not found"
                       ) as caught:
        client.by_id(42)
    assert (caught.value.status, caught.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as caught:
        client.latest("nobody-value")
    assert caught.value.error_code == 40401 and "GET /subjects/nobody-value/versions/latest" in str(caught.value)
    client.register("users-value", USER_V1)
    with pytest.raises(SchemaRegistryError) as caught:
        client.version("users-value", 7)
    assert caught.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as caught:
        client.register("users-value", _avro(("name", "string"), ("city", "string")))
    assert (caught.value.status, caught.value.error_code) == (409, 409)
    assert "incompatible" in str(caught.value)
    with pytest.raises(SchemaRegistryError) as caught:
        client.register("bad-value", _avro(("name", "strin")))
    assert caught.value.error_code == 42201
    with pytest.raises(ValueError, match="integer from 1"):
        client.version("users-value", 0)


def test_cache_is_proven_by_the_request_counter(server: RegistryServer, client: SchemaRegistry) -> None:
    client.register("users-value", USER_V1)
    client.register("users-value", USER_V2)
    fresh = SchemaRegistry(client.settings)
    for _ in range(3):
        assert fresh.by_id(1).schema == USER_V1.schema
        assert fresh.version("users-value", 1).id == 1
        assert fresh.latest("users-value").version == 2
    assert server.requests["/schemas/ids/1"] == 1
    assert server.requests["/subjects/users-value/versions/1"] == 1
    assert server.requests["/subjects/users-value/versions/latest"] == 3  # latest is never cached
    # what latest brought (id 2, version 2) is cached too: ids and versions never change
    assert fresh.by_id(2).schema == USER_V2.schema and fresh.version("users-value", 2).id == 2
    assert server.requests["/schemas/ids/2"] == 0 and server.requests["/subjects/users-value/versions/2"] == 0


def test_references_and_schema_types(client: SchemaRegistry) -> None:
    money = RegisteredSchema(json.dumps({"type": "record", "name": "Money", "namespace": "shop",
                                         "fields": [{"name": "cents", "type": "long"}]}))
    client.register("shop.Money", money)
    order = RegisteredSchema(json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                                         "fields": [{"name": "total", "type": "shop.Money"}]}),
                             references=(SchemaReference("shop.Money", "shop.Money", 1),))
    order_id = client.register("orders-value", order)
    assert client.by_id(order_id).references == (SchemaReference("shop.Money", "shop.Money", 1),)
    assert client.by_reference(client.by_id(order_id).references[0]).schema == money.schema
    json_schema = RegisteredSchema('{"type": "object", "properties": {"n": {"type": "integer"}}}', "JSON")
    proto = RegisteredSchema('syntax = "proto3";\npackage shop;\nmessage Ping { int64 at = 1; }\n', "PROTOBUF")
    json_id, proto_id = client.register("json-value", json_schema), client.register("ping-value", proto)
    assert client.by_id(json_id).schema_type == "JSON" and client.by_id(proto_id).schema_type == "PROTOBUF"
    assert client.latest("ping-value").schema == proto.schema
    with pytest.raises(SchemaRegistryError) as caught:
        client.register("bad-proto", RegisteredSchema("message {", "PROTOBUF"))
    assert caught.value.error_code == 42201


def test_refused_login_is_plain_and_hides_the_password(server: RegistryServer) -> None:
    wrong = "wrong-" + PASSWORD
    for settings, says in ((_settings(server.url, username="alice", password=wrong), "refused the credentials"),
                           (_settings(server.url, bearer_token=TOKEN), "refused the credentials"),
                           (_settings(server.url), "wants credentials and none are set")):
        with pytest.raises(SchemaRegistryError, match=f"GET /subjects: the registry {says}.*HTTP 401") as caught:
            SchemaRegistry(settings).subjects()
        assert (caught.value.status, caught.value.error_code) == (401, 40101)
        assert PASSWORD not in str(caught.value) and TOKEN not in str(caught.value)
    server.fail_next(1, status=403)
    with pytest.raises(SchemaRegistryError, match=r"not allowed this request.*HTTP 403") as caught:
        SchemaRegistry(_settings(server.url, username="alice", password=PASSWORD, max_retries=3)).subjects()
    assert caught.value.status == 403 and server.requests["/subjects"] == 4  # 3 refusals above, 403 not retried


def test_bearer_token() -> None:
    with RegistryServer(token=TOKEN) as server:
        assert SchemaRegistry(_settings(server.url, bearer_token=TOKEN)).subjects() == []


def test_failover_from_a_closed_port(server: RegistryServer) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    settings = registry_settings({"schema.registry.url": f"{dead},{server.url}",
                                  "schema.registry.basic.auth.user.info": f"alice:{PASSWORD}",
                                  "schema.registry.retry.backoff.ms": "60000"})
    started = time.monotonic()
    assert SchemaRegistry(settings).subjects() == []
    assert time.monotonic() - started < 5  # the next URL, not a backoff
    with pytest.raises(SchemaRegistryError, match=f"GET /subjects failed after 2 round.*{dead}: Connection refused"
                       ) as caught:
        SchemaRegistry(_settings(dead, max_retries=1)).subjects()
    assert caught.value.status is None


def test_failover_on_5xx_and_retries_with_backoff(server: RegistryServer, client: SchemaRegistry) -> None:
    client.register("users-value", USER_V1)
    server.fail_next(2, status=503, path="/schemas/ids/1")
    patient = SchemaRegistry(_settings(server.url, server.url, username="alice", password=PASSWORD,
                                       max_retries=1))
    assert patient.by_id(1).schema == USER_V1.schema  # both URLs answered 503, the retry round succeeded
    assert server.requests["/schemas/ids/1"] == 3
    server.fail_next(3, status=500, path="/schemas/ids/1")
    retried = SchemaRegistry(_settings(server.url, username="alice", password=PASSWORD, max_retries=3))
    assert retried.by_id(1).id == 1 and server.requests["/schemas/ids/1"] == 7
    server.fail_next(5, status=500)
    with pytest.raises(SchemaRegistryError, match=r"after 3 round.*HTTP 500 error 50001") as caught:
        SchemaRegistry(_settings(server.url, username="alice", password=PASSWORD, max_retries=2)).subjects()
    assert (caught.value.status, caught.value.error_code) == (500, 50001)


def test_timeout_against_a_server_that_never_answers() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing ever reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(SchemaRegistryError, match=f"{url}: timed out"):
            SchemaRegistry(_settings(url, timeout_ms=200, max_retries=1)).subjects()
        assert 0.35 < time.monotonic() - started < 5


def test_registry_for_is_shared_per_settings(server: RegistryServer) -> None:
    settings = _settings(server.url, username="alice", password=PASSWORD)
    shared = registry_for(settings)
    assert registry_for(_settings(server.url, username="alice", password=PASSWORD)) is shared
    assert registry_for(_settings(server.url, username="alice", password="other")) is not shared
    assert pickle.loads(pickle.dumps(shared)) is shared  # an unpickled client is the process's shared one
    found: list[SchemaRegistry] = []
    threads = [threading.Thread(target=lambda: found.append(registry_for(pickle.loads(pickle.dumps(settings)))))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r is shared for r in found)
    shared.register("users-value", USER_V1)
    # tasks on many threads share one cache: one request for the id however many ask
    results: list[str] = []
    workers = [threading.Thread(target=lambda: results.append(registry_for(settings).by_id(1).schema))
               for _ in range(6)]
    shared.by_id(1)
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [USER_V1.schema] * 6 and server.requests["/schemas/ids/1"] == 1


def test_secrets_never_show(server: RegistryServer) -> None:
    settings = registry_settings({"schema.registry.url": f"http://alice:{PASSWORD}@127.0.0.1:{_closed_port()}",
                                  "schema.registry.max.retries": "0"})
    registry = SchemaRegistry(settings)
    for text in (repr(registry), str(registry), repr(settings)):
        assert PASSWORD not in text
    with pytest.raises(SchemaRegistryError) as caught:
        registry.subjects()
    assert PASSWORD not in str(caught.value) and "alice" not in str(caught.value)

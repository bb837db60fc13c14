"""The caches every format shares (`kafka_spark.formats.cache`): per writer schema id, what reads its payloads or
why nothing can, looked up once and bounded however many ids bad records name; a writer schema the registry
lost a reference of is the record's error; a registry outage is not kept."""

from __future__ import annotations

import gc
import json
import threading
import tracemalloc
from collections.abc import Callable

import pytest

from kafka_spark.errors import PayloadError, SchemaRegistryError
from kafka_spark.formats.avro.codec import avro_decoder
from kafka_spark.formats.cache import MAX_ENTRIES, BoundedCache, WriterCache
from kafka_spark.formats.json_schema.codec import json_schema_decoder
from kafka_spark.formats.model import PayloadDecoder, RegisteredSchema, SchemaReference
from kafka_spark.formats.protobuf.codec import protobuf_decoder

AVRO = RegisteredSchema(json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                                    "fields": [{"name": "id", "type": "long"}]}), "AVRO", (), 1)
PROTO = RegisteredSchema('syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; }\n', "PROTOBUF", (), 1)
JSON = RegisteredSchema(json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}}), "JSON", (), 1)

WRITERS = {
    "avro": RegisteredSchema(json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                                         "fields": [{"name": "id", "type": "long"},
                                                    {"name": "total", "type": "shop.Money"}]}),
                             "AVRO", (SchemaReference("shop.Money", "money-subject", 1),), 2),
    "protobuf": RegisteredSchema('syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
                                 "message Order { int64 id = 1; Money total = 2; }\n", "PROTOBUF",
                                 (SchemaReference("money.proto", "money-subject", 1),), 2),
    "json": RegisteredSchema(json.dumps({"type": "object", "properties": {"id": {"type": "integer"},
                                                                          "total": {"$ref": "money.json"}}}),
                             "JSON", (SchemaReference("money.json", "money-subject", 1),), 2),
}


class Source:
    """The reader (id 1) and optionally the writers above (id 2); other ids are unknown (40403). References
    fail with `reference_failure`. Counts the lookups by id."""

    def __init__(self, reader: RegisteredSchema, writer: RegisteredSchema | None = None,
                 reference_failure: SchemaRegistryError | None = None) -> None:
        self.schemas = {1: reader, **({2: writer} if writer is not None else {})}
        self.reference_failure = reference_failure
        self.lookups = 0

    def by_id(self, schema_id: int) -> RegisteredSchema:
        self.lookups += 1
        if schema_id in self.schemas:
            return self.schemas[schema_id]
        raise SchemaRegistryError(f"Schema {schema_id} not found", status=404, error_code=40403)

    def by_reference(self, reference: SchemaReference) -> RegisteredSchema:
        if self.reference_failure is not None:
            raise self.reference_failure
        raise AssertionError("the tests give references only to fail them")


DECODERS: dict[str, Callable[[Source], PayloadDecoder]] = {
    "avro": lambda source: avro_decoder(AVRO, source),
    "protobuf": lambda source: protobuf_decoder(PROTO, source),
    "json": lambda source: json_schema_decoder(JSON, source),
}
READERS = {"avro": AVRO, "protobuf": PROTO, "json": JSON}


def _payload(fmt: str) -> bytes:
    """A payload of the reader's Order with id 1."""
    return {"avro": b"\x02", "protobuf": b"\x08\x01", "json": b'{"id": 1}'}[fmt]


def test_a_bounded_cache_drops_its_oldest_entries_and_keeps_what_was_there_first() -> None:
    cache: BoundedCache[int, str] = BoundedCache(3)
    for i in range(5):
        assert cache.put(i, f"v{i}") == f"v{i}"
    assert dict(cache) == {2: "v2", 3: "v3", 4: "v4"}
    assert cache.put(3, "other") == "v3"  # another task prepared it first: both use that one
    with pytest.raises(ValueError, match="at least one"):
        BoundedCache(0)


def test_a_bounded_cache_stays_bounded_under_concurrent_puts() -> None:
    cache: BoundedCache[tuple[int, int], int] = BoundedCache(50)
    failures: list[BaseException] = []

    def fill(worker: int) -> None:
        try:
            for i in range(20_000):
                cache.put((worker, i), i)
                cache.get((worker, i - 1))
        except BaseException as exc:  # any failure in a thread is the test's
            failures.append(exc)

    threads = [threading.Thread(target=fill, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(cache) == 50


def test_a_writer_cache_keeps_reasons_and_passes_outages_through() -> None:
    calls: list[int] = []

    def prepare(schema_id: int) -> str:
        calls.append(schema_id)
        if schema_id == 13:
            raise PayloadError("unlucky")
        if schema_id == 503:
            raise SchemaRegistryError("down", status=503)
        return f"reader {schema_id}"

    cache = WriterCache(prepare, limit=2)
    assert cache(1) == "reader 1" and cache(1) == "reader 1"
    for _ in range(2):
        with pytest.raises(PayloadError, match="unlucky"):
            cache(13)
    for _ in range(2):
        with pytest.raises(SchemaRegistryError, match="down"):
            cache(503)
    assert calls == [1, 13, 503, 503]
    cache(2)
    cache(3)  # a third reader pushes out the oldest, id 1
    cache(1)
    assert calls[-3:] == [2, 3, 1] and len(cache) == 3  # two readers, one reason


@pytest.mark.parametrize("fmt", sorted(DECODERS))
def test_unknown_ids_are_asked_once_and_kept_in_bounded_memory(fmt: str) -> None:
    source = Source(READERS[fmt])
    decoder = DECODERS[fmt](source)

    indexes, payload = ((0,) if fmt == "protobuf" else ()), _payload(fmt)

    def bogus(ids: range) -> None:
        for schema_id in ids:
            try:
                decoder.decode(schema_id, indexes, payload)
            except PayloadError as exc:
                assert f"schema id {schema_id} is not in the" in str(exc)
            else:
                raise AssertionError(f"unknown id {schema_id} decoded")

    bogus(range(100, 110))
    bogus(range(100, 110))
    assert source.lookups == 10  # each unknown id asked once
    gc.collect()
    tracemalloc.start()
    try:
        bogus(range(1000, 1000 + MAX_ENTRIES))
        gc.collect()
        full = tracemalloc.get_traced_memory()[0]
        bogus(range(100_000, 100_000 + 2 * MAX_ENTRIES))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - full
    finally:
        tracemalloc.stop()
    # twice as many ids again: kept, they would take ~4 MB (~500 bytes each); a full cache's dicts only resize
    assert grown < 1 << 20, f"{grown} bytes kept for {2 * MAX_ENTRIES} more unknown ids"
    assert decoder.decode(1, indexes, payload) is not None  # the reader's own id still reads


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_writer_schema_whose_reference_is_gone_is_the_record_s_error_asked_once(fmt: str) -> None:
    gone = SchemaRegistryError("Version 1 not found", status=404, error_code=40402)
    source = Source(READERS[fmt], WRITERS[fmt], reference_failure=gone)
    decoder = DECODERS[fmt](source)
    for _ in range(2):
        with pytest.raises(PayloadError, match=r"writer schema id 2: .*Version 1 not found"):
            decoder.decode(2, (0,) if fmt == "protobuf" else (), _payload(fmt))
    assert source.lookups == 1


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_an_outage_while_fetching_a_reference_fails_and_is_asked_again(fmt: str) -> None:
    source = Source(READERS[fmt], WRITERS[fmt], reference_failure=SchemaRegistryError("unavailable", status=503))
    decoder = DECODERS[fmt](source)
    for _ in range(2):
        with pytest.raises(SchemaRegistryError, match="unavailable"):
            decoder.decode(2, (0,) if fmt == "protobuf" else (), _payload(fmt))
    assert source.lookups == 2

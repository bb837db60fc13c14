"""The bounded caches of the payload formats: what the registry client and every decoder keep per schema id.

Bad records can name any of 2^31 schema ids, and each id a decoder has seen costs a registry lookup and some
memory; entries past `MAX_ENTRIES` push the oldest out, so that memory stays bounded whatever the ids, while
the ids a stream really uses stay cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from kafka_spark.errors import PayloadError, SchemaRegistryError
from kafka_spark.formats.model import is_not_found

MAX_ENTRIES = 4096

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(dict[K, V]):
    """A dict that holds at most `limit` entries: `put` into a full one drops the oldest entry.

    Reads are plain dict reads (the decoders read once per record); `put` serialises writers, so concurrent
    tasks of one process never see a half-done eviction.
    """

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        super().__init__()
        if limit < 1:
            raise ValueError(f"a cache holds at least one entry, not {limit}")
        self.limit = limit
        self._lock = threading.Lock()

    def put(self, key: K, value: V) -> V:
        """The value kept for `key`: one already there (another task prepared it first), else `value`."""
        with self._lock:
            if key in self:
                return self[key]
            while len(self) >= self.limit:
                del self[next(iter(self))]
            self[key] = value
            return value


_MISSING: Any = object()


class WriterCache(Generic[V]):
    """Per writer schema id, what `prepare` made to read its payloads, or the reason there is none.

    `prepare(schema_id)` raises PayloadError when the id's payloads cannot be read (unknown id, another format,
    a schema that does not parse): the reason is kept, so that a bad id asks the registry once, and calling
    the cache for that id raises PayloadError with it. A schema the registry does not have (404) behind the
    id, its references included, is such a reason. Any other registry failure (an outage, refused
    credentials) passes through and is not kept: the next record asks again.

    `ready` holds the prepared values alone, a plain dict for the per-record lookup; call the cache on a miss.
    """

    def __init__(self, prepare: Callable[[int], V], limit: int = MAX_ENTRIES) -> None:
        self._prepare = prepare
        self.ready: BoundedCache[int, V] = BoundedCache(limit)
        self._refused: BoundedCache[int, str] = BoundedCache(limit)

    def __call__(self, schema_id: int) -> V:
        found = self.ready.get(schema_id, _MISSING)
        if found is not _MISSING:
            return found
        reason = self._refused.get(schema_id)
        if reason is None:
            try:
                return self.ready.put(schema_id, self._prepare(schema_id))
            except PayloadError as exc:
                reason = self._refused.put(schema_id, str(exc))
            except SchemaRegistryError as exc:
                if not is_not_found(exc):
                    raise
                reason = self._refused.put(schema_id, f"writer schema id {schema_id}: the schema registry has no "
                                                      f"schema it needs ({exc})")
        raise PayloadError(reason)

    def __len__(self) -> int:
        return len(self.ready) + len(self._refused)

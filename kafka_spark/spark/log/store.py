"""Where a `pykafka-log` path lives: the local disk, or an object store reached through pyarrow.fs.

Object stores take the Hadoop keys Spark users already set (`fs.s3a.endpoint`, `fs.s3a.access.key`,
...) as reader options, with the AWS SDK's environment variables as fallbacks; the mapping from
those keys to pyarrow is the one the Delta sink uses for the same stores.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_spark.segments import Storage, resolve

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Location:
    """A directory as the user named it (`uri`), its storage and its path within that storage."""

    uri: str
    storage: Storage
    path: str
    filesystem: object | None = None

    def child(self, name: str) -> Location:
        """The entry `name` inside this directory."""
        sep = "" if self.uri.endswith("/") else "/"
        return Location(f"{self.uri}{sep}{name}", self.storage, self.storage.join(self.path, name), self.filesystem)


def locate(uri: str, store: Mapping[str, str]) -> Location:
    """The storage of `uri`: local for plain paths and file://, pyarrow.fs for other schemes."""
    scheme, sep, _ = uri.partition("://")
    if not sep or scheme.lower() == "file" or len(scheme) < 2:
        storage, path = resolve(uri)
        return Location(uri, storage, path)
    from kafka_spark.segments.object_store import arrow_filesystem, environment_hadoop_conf

    fs, path = arrow_filesystem(uri, {**environment_hadoop_conf(os.environ), **store})
    storage, path = resolve(path, fs)
    return Location(uri, storage, path, fs)


def expand(pattern: str, store: Mapping[str, str]) -> list[Location]:
    """The directories `pattern` names: itself, or what its glob characters match (sorted)."""
    if not _GLOB_CHARS & set(pattern):
        return [locate(pattern, store)]
    scheme, sep, rest = pattern.partition("://")
    head = f"{scheme}://" if sep else ""
    parts = (rest if sep else pattern).split("/")
    # The components before the first glob character name one directory to start listing from.
    fixed = next(i for i, p in enumerate(parts) if _GLOB_CHARS & set(p))
    root = "/".join(parts[:fixed]) or "/"
    found = [locate(head + root, store)]
    for part in parts[fixed:]:
        if not part:
            continue
        nxt = []
        for loc in found:
            try:
                entries = loc.storage.list(loc.path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            nxt += [loc.child(e.name) for e in entries if e.is_dir and fnmatch.fnmatchcase(e.name, part)]
        found = nxt
    return sorted(found, key=lambda loc: loc.uri)


__all__ = ["Location", "expand", "locate"]

"""The small files the sink keeps beside a table (`<table>/_kafka_spark/...`), on the table's own store.

Three ways to reach them, one interface:

- `LocalFiles`: a plain path or `file:` URI, with Python's file I/O;
- `HadoopFiles`: any store Spark writes to, through Hadoop's FileSystem of a SparkSession (the same
  file system, settings and credentials Delta uses for the table);
- `ArrowFiles`: without Spark (the CLI), through a pyarrow file system built from the same Hadoop settings.

Paths are relative to the table (`_kafka_spark/offsets/<sink>/0.json`). A file written is seen whole or
not at all: object stores make an object visible when its upload completes; elsewhere it is written
beside its final name and renamed.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    import pyarrow.fs

# Stores where an object appears only once its upload completes: no temporary name, no rename (a copy there).
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
OBJECT_STORE_SCHEMES = frozenset({"s3a", "s3n", "s3", "gs"})


def local_path(location: str | os.PathLike[str]) -> Path | None:
    """The local directory of a plain path or `file:` URI (`file:/t`, `file:///t`); None for other stores."""
    text = str(location)
    if text.startswith("file:"):
        parsed = urlparse(text)
        return Path(unquote(parsed.path)) if parsed.netloc in ("", "localhost") else None
    return None if _SCHEME.match(text) and not os.path.isabs(text) else Path(text)


def _scheme(location: str) -> str:
    head, sep, _ = location.partition("://")
    return head.lower() if sep else ""


def _temporary(name: str) -> str:
    return f".{name}.{uuid.uuid4().hex[:12]}.tmp"


class TableFiles(ABC):
    """Read, write, list and delete small text files under a table's directory."""

    def __init__(self, location: str) -> None:
        self.location = location.rstrip("/") or location

    def describe(self, rel: str) -> str:
        """The full location of `rel`, for messages."""
        return f"{self.location}/{rel}"

    @abstractmethod
    def read_text(self, rel: str) -> str | None:
        """The file's text, or None when it does not exist."""

    @abstractmethod
    def write_text(self, rel: str, text: str) -> None:
        """Create or replace the file; readers see the old content or the new, never a part."""

    @abstractmethod
    def list_dirs(self, rel: str) -> list[str]:
        """The names of the directories in `rel` ([] when it does not exist)."""

    @abstractmethod
    def list_files(self, rel: str) -> list[str]:
        """The names of the files in `rel` ([] when it does not exist)."""

    @abstractmethod
    def delete(self, rel: str) -> None:
        """Delete a file; nothing happens when it does not exist."""


class LocalFiles(TableFiles):
    """A table on a local or mounted file system."""

    def __init__(self, root: Path) -> None:
        super().__init__(str(root))
        self.root = root

    def describe(self, rel: str) -> str:
        return str(self.root / rel)

    def read_text(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text()
        except FileNotFoundError:
            return None

    def write_text(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        # Two threads of one driver (a stream and a reader of its position) may write the same file.
        tmp = path.with_name(_temporary(path.name))
        tmp.write_text(text)
        os.replace(tmp, path)

    def list_dirs(self, rel: str) -> list[str]:
        path = self.root / rel
        return sorted(p.name for p in path.iterdir() if p.is_dir()) if path.is_dir() else []

    def list_files(self, rel: str) -> list[str]:
        path = self.root / rel
        return sorted(p.name for p in path.iterdir() if p.is_file()) if path.is_dir() else []

    def delete(self, rel: str) -> None:
        (self.root / rel).unlink(missing_ok=True)


class HadoopFiles(TableFiles):
    """A table on any store the SparkSession's Hadoop FileSystem reaches (s3a://, abfss://, gs://, hdfs://, ...)."""

    def __init__(self, spark: Any, location: str) -> None:
        super().__init__(location)
        self._jvm = spark.sparkContext._jvm
        # Delta's view of the settings: the session's SQL conf over the context's Hadoop conf.
        conf = spark._jsparkSession.sessionState().newHadoopConf()
        self._root = self._jvm.org.apache.hadoop.fs.Path(self.location)
        self._fs = self._root.getFileSystem(conf)
        self._atomic_put = _scheme(self.location) in OBJECT_STORE_SCHEMES

    def _path(self, rel: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self._root, rel)

    def read_text(self, rel: str) -> str | None:
        path = self._path(rel)
        try:
            stream = self._fs.open(path)
        except Exception as exc:  # py4j carries Java's FileNotFoundException as Py4JJavaError
            if _not_found(exc):
                return None
            raise
        try:
            return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()

    def _put(self, path: Any, data: bytes) -> None:
        out = self._fs.create(path, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def write_text(self, rel: str, text: str) -> None:
        path = self._path(rel)
        if self._atomic_put:
            self._put(path, text.encode())
            return
        tmp = self._jvm.org.apache.hadoop.fs.Path(path.getParent(), _temporary(path.getName()))
        self._put(tmp, text.encode())
        # Hadoop's rename does not replace an existing file: the old one goes first (readers of a kept
        # file that is briefly absent fall back to the Delta log).
        if not self._fs.rename(tmp, path):
            self._fs.delete(path, False)
            if not self._fs.rename(tmp, path):
                self._fs.delete(tmp, False)
                raise OSError(f"cannot rename a new file to {self.describe(rel)}")

    def _list(self, rel: str, dirs: bool) -> list[str]:
        try:
            statuses = self._fs.listStatus(self._path(rel))
        except Exception as exc:
            if _not_found(exc):
                return []
            raise
        return sorted(s.getPath().getName() for s in statuses if bool(s.isDirectory()) == dirs)

    def list_dirs(self, rel: str) -> list[str]:
        return self._list(rel, dirs=True)

    def list_files(self, rel: str) -> list[str]:
        return self._list(rel, dirs=False)

    def delete(self, rel: str) -> None:
        self._fs.delete(self._path(rel), False)


def _not_found(exc: BaseException) -> bool:
    java = getattr(exc, "java_exception", None)
    name = java.getClass().getName() if java is not None else type(exc).__name__
    return name in ("java.io.FileNotFoundException", "FileNotFoundError")


class ArrowFiles(TableFiles):
    """A table on a store reached through a pyarrow file system (`root`: the table's path in it)."""

    def __init__(self, location: str, fs: pyarrow.fs.FileSystem, root: str) -> None:
        super().__init__(location)
        self._fs = fs
        self._root = root.rstrip("/")
        self._atomic_put = _scheme(location) in OBJECT_STORE_SCHEMES

    def _path(self, rel: str) -> str:
        return f"{self._root}/{rel}"

    def read_text(self, rel: str) -> str | None:
        try:
            with self._fs.open_input_stream(self._path(rel)) as stream:
                return stream.read().decode()
        except FileNotFoundError:
            return None

    def _put(self, path: str, data: bytes) -> None:
        with self._fs.open_output_stream(path) as out:
            out.write(data)

    def write_text(self, rel: str, text: str) -> None:
        path = self._path(rel)
        if self._atomic_put:
            self._put(path, text.encode())
            return
        parent, _, name = path.rpartition("/")
        self._fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/{_temporary(name)}"
        self._put(tmp, text.encode())
        self._fs.move(tmp, path)

    def _list(self, rel: str, dirs: bool) -> list[str]:
        from pyarrow.fs import FileSelector, FileType

        wanted = FileType.Directory if dirs else FileType.File
        infos = self._fs.get_file_info(FileSelector(self._path(rel), allow_not_found=True))
        return sorted(info.base_name for info in infos if info.type == wanted)

    def list_dirs(self, rel: str) -> list[str]:
        return self._list(rel, dirs=True)

    def list_files(self, rel: str) -> list[str]:
        return self._list(rel, dirs=False)

    def delete(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(self._path(rel))

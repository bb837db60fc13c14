"""Where log files are read from: the local disk, or any filesystem pyarrow.fs speaks (s3://, ...).

A `Source` fixes the file's size when it is opened, the way Kafka's own readers do, so that bytes
a live broker appends meanwhile are not half-read; every read is bounded by that size.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

# Hadoop's scheme names for S3 mean the same store to pyarrow.
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


class Source(Protocol):
    """An open file of fixed `size` that reads byte ranges."""

    path: str
    size: int

    def read(self, position: int, length: int) -> bytes: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Entry:
    """A name in a directory listing."""

    name: str
    is_dir: bool


class Storage(Protocol):
    """The few filesystem operations the log reader needs."""

    def list(self, path: str) -> list[Entry]: ...

    def open(self, path: str) -> Source: ...

    def exists(self, path: str) -> bool: ...

    def join(self, *parts: str) -> str: ...


class LocalFile:
    """A local file read with `pread` (no shared file position, safe across threads)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(self._fd).st_size
        except OSError:
            os.close(self._fd)
            raise

    def read(self, position: int, length: int) -> bytes:
        length = max(0, min(length, self.size - position))
        data = os.pread(self._fd, length, position)
        if len(data) != length:  # the file shrank after it was opened
            raise EOFError(f"{self.path}: {length} bytes expected at {position}, {len(data)} read")
        return data

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalStorage:
    """The local filesystem."""

    def list(self, path: str) -> list[Entry]:
        out = []
        with os.scandir(path) as it:
            for e in it:
                try:
                    is_dir = e.is_dir()
                except OSError:  # vanished between listing and stat
                    continue
                out.append(Entry(e.name, is_dir))
        return out

    def open(self, path: str) -> Source:
        return LocalFile(path)

    def exists(self, path: str) -> bool:
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            return False

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)


class ArrowFile:
    """A file of a pyarrow filesystem."""

    def __init__(self, fs: FileSystem, path: str) -> None:
        self.path = path
        self._file = fs.open_input_file(path)
        self.size = int(self._file.size())

    def read(self, position: int, length: int) -> bytes:
        length = max(0, min(length, self.size - position))
        got = self._file.read_at(length, position)
        data = got.to_pybytes() if hasattr(got, "to_pybytes") else bytes(got)
        if len(data) != length:
            raise EOFError(f"{self.path}: {length} bytes expected at {position}, {len(data)} read")
        return data

    def close(self) -> None:
        self._file.close()


class ArrowStorage:
    """Any `pyarrow.fs.FileSystem`; paths are the filesystem's own (no scheme)."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs

    def list(self, path: str) -> list[Entry]:
        from pyarrow import fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=False))
        return [Entry(i.base_name, i.type == pafs.FileType.Directory) for i in infos]

    def open(self, path: str) -> Source:
        return ArrowFile(self.fs, path)

    def exists(self, path: str) -> bool:
        from pyarrow import fs as pafs

        return self.fs.get_file_info(path).type == pafs.FileType.File

    def join(self, *parts: str) -> str:
        return "/".join([parts[0].rstrip("/"), *parts[1:]])


def resolve(path: str, filesystem: object | None = None) -> tuple[Storage, str]:
    """The storage that holds `path` and the path within it.

    A plain path is local unless `filesystem` (a `pyarrow.fs.FileSystem`) is given; a URI such as
    `s3a://bucket/logs` is opened with pyarrow.fs (s3a/s3n are read as s3).
    """
    if filesystem is not None:
        return ArrowStorage(filesystem), path
    scheme, sep, rest = path.partition("://")
    if not sep or len(scheme) < 2:  # Windows drive letters are not schemes
        return LocalStorage(), path
    if scheme == "file":
        return LocalStorage(), rest
    from pyarrow import fs as pafs

    fs, inner = pafs.FileSystem.from_uri(f"{_SCHEME_ALIASES.get(scheme, scheme)}://{rest}")
    return ArrowStorage(fs), inner


__all__ = ["ArrowStorage", "Entry", "LocalFile", "LocalStorage", "Source", "Storage", "resolve"]

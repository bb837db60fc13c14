"""Registered Protobuf schemas as descriptors in a private pool: `.proto` source (what the registry stores)
compiled with protoc from grpcio-tools, or a base64 `FileDescriptorProto` (what Confluent's Python
serializer registers); imports come from the schema's references, recursively, or are well-known files."""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Generic, TypeVar

from google.protobuf import descriptor_pb2, descriptor_pool  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FileDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from kafka_spark.errors import ConfigError
from kafka_spark.formats.model import RegisteredSchema, SchemaSource

# The name the root schema's file gets in its pool; references keep their import paths.
ROOT_FILE = "kafka_spark/registered_schema.proto"

# Imports the registry never holds as references (Confluent's serializers skip them), found in the Python
# modules that ship them: the protobuf runtime's well-known types, googleapis' google/type and Confluent's own.
_BUILTIN_PREFIXES = {"google/protobuf/": "", "google/type/": "", "confluent/": "confluent_kafka.schema_registry."}

# Imports of .proto source, to hand protoc the well-known files among them (a match inside a comment only adds
# a file protoc does not need).
_IMPORT = re.compile(r'\bimport\s+(?:public\s+|weak\s+)?"([^"]+)"')
_CACHE_SIZE = 256
V = TypeVar("V")


@dataclass(frozen=True)
class _SchemaFile:
    """One file of a schema and the files it imports through references, hashable by content."""

    name: str
    text: str
    deps: tuple[_SchemaFile, ...]
    label: str = field(default="", compare=False)  # how errors name the schema


class _LruCache(Generic[V]):
    """The most recently used compiled schemas, keyed by content."""

    def __init__(self) -> None:
        self._items: OrderedDict[_SchemaFile, V] = OrderedDict()

    def get_or(self, key: _SchemaFile, make: Callable[[], V]) -> V:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        if len(self._items) > _CACHE_SIZE:
            self._items.popitem(last=False)
        return value


_lock = threading.RLock()
_protos: _LruCache[descriptor_pb2.FileDescriptorProto] = _LruCache()
_files: _LruCache[FileDescriptor] = _LruCache()  # each root in a pool of its own


def load_schema(schema: RegisteredSchema, source: SchemaSource) -> FileDescriptor:
    """The root file of a PROTOBUF schema, built in a private pool with everything it imports; ConfigError
    when the schema or one it references does not compile (with protoc's message)."""
    if schema.schema_type != "PROTOBUF":
        raise ConfigError(f"schema {schema.label} is {schema.schema_type}, not PROTOBUF")
    root = _resolve(schema, source, ROOT_FILE, (), schema.label)
    with _lock:
        return _files.get_or(root, lambda: _build_pool(root))


def messages(file: FileDescriptor) -> Iterator[Descriptor]:
    """Every message declared in `file`, nested ones after their parent, in declaration order."""
    stack = list(reversed(file.message_types_by_name.values()))
    while stack:
        message = stack.pop()
        yield message
        stack.extend(reversed(message.nested_types))


def find_message(file: FileDescriptor, name: str | None) -> Descriptor:
    """The message `name` (full name, or the simple name of a top-level message) in `file`; its first
    message when `name` is None."""
    if name is None:
        for message in file.message_types_by_name.values():
            return message
        raise ConfigError("the Protobuf schema declares no message")
    for message in messages(file):
        if message.full_name == name.lstrip(".") or (message.containing_type is None and message.name == name):
            return message
    known = ", ".join(m.full_name for m in messages(file))
    raise ConfigError(f"the Protobuf schema has no message {name!r}; it declares: {known}")


def message_at(file: FileDescriptor, indexes: tuple[int, ...]) -> Descriptor:
    """The message at Confluent's message indexes (top-level position, then nested positions) in `file`;
    IndexError when there is none."""
    path = indexes or (0,)
    if path[0] < 0:
        raise IndexError(path[0])
    message: Descriptor = list(file.message_types_by_name.values())[path[0]]
    for index in path[1:]:
        if index < 0:
            raise IndexError(index)
        message = message.nested_types[index]
    return message


def message_indexes(message: Descriptor) -> tuple[int, ...]:
    """Confluent's message indexes of `message` within its file."""
    path: list[int] = []
    while message.containing_type is not None:
        parent = message.containing_type
        path.append(list(parent.nested_types).index(message))
        message = parent
    path.append(list(message.file.message_types_by_name.values()).index(message))
    return tuple(reversed(path))


def _resolve(schema: RegisteredSchema, source: SchemaSource, name: str, chain: tuple[str, ...],
             label: str) -> _SchemaFile:
    if name in chain:
        raise ConfigError(f"Protobuf schema imports form a cycle: {' -> '.join((*chain, name))}")
    deps = []
    for reference in schema.references:
        referenced = source.by_reference(reference)
        deps.append(_resolve(referenced, source, reference.name, (*chain, name),
                             f"{reference.name!r} ({reference.subject} v{reference.version})"))
    return _SchemaFile(name, schema.schema, tuple(deps), label)


def _build_pool(root: _SchemaFile) -> FileDescriptor:
    pool = descriptor_pool.DescriptorPool()
    for proto in _closure(root):
        try:
            pool.Add(proto)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Protobuf schema file {proto.name!r} is invalid: {exc}") from exc
    return pool.FindFileByName(root.name)


def _closure(root: _SchemaFile) -> list[descriptor_pb2.FileDescriptorProto]:
    """The compiled files `root` needs, dependencies first, ending with `root` itself."""
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def add(proto: descriptor_pb2.FileDescriptorProto, by_name: dict[str, _SchemaFile]) -> None:
        if proto.name in out:
            return
        for dep in proto.dependency:
            if dep in out:
                continue
            if dep in by_name:
                visit(by_name[dep])
            else:
                builtin = _builtin(dep)
                if builtin is None:
                    raise ConfigError(f"Protobuf schema file {proto.name!r} imports {dep!r}, which is neither "
                                      f"among its references nor a well-known file")
                add(builtin, {})
        out[proto.name] = proto

    def visit(file: _SchemaFile) -> None:
        add(_compiled(file), {dep.name: dep for dep in file.deps})

    visit(root)
    return list(out.values())


def _compiled(file: _SchemaFile) -> descriptor_pb2.FileDescriptorProto:
    with _lock:
        return _protos.get_or(file, lambda: _compile(file))


def _compile(file: _SchemaFile) -> descriptor_pb2.FileDescriptorProto:
    serialized = _base64_descriptor(file.text)
    if serialized is not None:
        proto = descriptor_pb2.FileDescriptorProto()
        try:
            proto.ParseFromString(serialized)
        except DecodeError as exc:
            raise ConfigError(f"Protobuf schema {file.label} is base64 but not a FileDescriptorProto: {exc}") from exc
        # Confluent's serializers name files by their import path in the referring schema, not their own name.
        proto.name = file.name
        return proto
    return _protoc(file)


def _base64_descriptor(text: str) -> bytes | None:
    stripped = "".join(text.split())
    if not stripped or ";" in stripped:
        return None
    try:
        return base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return None


def _protoc(file: _SchemaFile) -> descriptor_pb2.FileDescriptorProto:
    """Compile `.proto` source with its imports given as compiled descriptors."""
    from grpc_tools import _protoc_compiler  # type: ignore[import-untyped]

    relative = PurePosixPath(file.name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ConfigError(f"Protobuf import path {file.name!r} is not a relative path")
    deps = descriptor_pb2.FileDescriptorSet()
    by_name = {dep.name: dep for dep in file.deps}
    needed = set(by_name) | set(_IMPORT.findall(file.text))
    seen: set[str] = set()
    for name in sorted(needed):
        protos = _closure(by_name[name]) if name in by_name else _builtin_closure(name)
        for proto in protos:
            if proto.name not in seen:
                seen.add(proto.name)
                deps.file.append(proto)
    with tempfile.TemporaryDirectory(prefix="kafka-spark-protoc-") as tmp:
        src = os.path.join(tmp, "src")
        path = os.path.join(src, *relative.parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(file.text)
        deps_path = os.path.join(tmp, "deps.pb")
        with open(deps_path, "wb") as f:
            f.write(deps.SerializeToString())
        out_path = os.path.join(tmp, "out.pb")
        args = ["protoc", f"-I{src}", f"--descriptor_set_in={deps_path}", f"--descriptor_set_out={out_path}",
                str(relative)]
        code, errors = _run_captured(_protoc_compiler.run_main, [a.encode() for a in args], tmp)
        if code != 0 or not os.path.exists(out_path):
            message = errors.replace(src + os.sep, "").strip() or f"protoc exited with {code}"
            raise ConfigError(f"Protobuf schema {file.label} does not compile: {message}")
        with open(out_path, "rb") as f:
            out = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    return out.file[0]


def _run_captured(run: Callable[[list[bytes]], int], args: list[bytes], tmp: str) -> tuple[int, str]:
    """Run protoc in this process; it writes its diagnostics to file descriptor 2, so that descriptor
    points at a file while it runs."""
    log = os.path.join(tmp, "protoc.log")
    with _lock, open(log, "w+b") as capture:
        saved = os.dup(2)
        try:
            os.dup2(capture.fileno(), 2)
            code = run(args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        return int(code), capture.read().decode("utf-8", "replace")


def _builtin(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A well-known file from the Python module that ships it, or None."""
    for prefix, package in _BUILTIN_PREFIXES.items():
        if name.startswith(prefix) and name.endswith(".proto"):
            module = package + name[: -len(".proto")].replace("/", ".") + "_pb2"
            try:
                importlib.import_module(module)
                found = descriptor_pool.Default().FindFileByName(name)
            except (ImportError, KeyError):
                return None
            return descriptor_pb2.FileDescriptorProto.FromString(found.serialized_pb)
    return None


def _builtin_closure(name: str) -> list[descriptor_pb2.FileDescriptorProto]:
    """The well-known file `name` after the files it imports; empty when it is not one (protoc then
    reports the missing import)."""
    proto = _builtin(name)
    if proto is None:
        return []
    out = [p for dep in proto.dependency for p in _builtin_closure(dep)]
    out.append(proto)
    return out

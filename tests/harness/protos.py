"""Protobuf test schemas compiled with protoc (grpcio-tools), independently of the codec's own compiler: the
descriptor set Spark's `descFilePath` takes, and message classes for Confluent's Protobuf serdes."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_tools import protoc

WELL_KNOWN = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def descriptor_set(files: dict[str, str]) -> bytes:
    """A serialized FileDescriptorSet of `files` ({import path: .proto text}) and everything they import."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            path = os.path.join(tmp, "src", name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        out = os.path.join(tmp, "out.pb")
        code = protoc.main(["protoc", f"-I{os.path.join(tmp, 'src')}", f"-I{WELL_KNOWN}", "--include_imports",
                            f"--descriptor_set_out={out}", *files])
        assert code == 0, f"protoc failed on {sorted(files)}"
        with open(out, "rb") as f:
            return f.read()


def message_class(files: dict[str, str], name: str) -> Any:
    """The generated class of message `name` (a full name) declared in `files`."""
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set(files)).file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))

"""Avro writer schemas that fastavro's compiled reader must not be given, and the bounded pure-Python read that
takes them: recursive records (the compiled reader recurses on the C stack) and items of zero bytes (a count
alone would ask for any number of values). And the payload buffer that keeps the compiled reader's skips within
the payload (`StrictPayload`)."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from typing import Any

from fastavro import _read_py
from fastavro.io.binary_decoder import BinaryDecoder

from kafka_spark.errors import PayloadError
from kafka_spark.formats.avro.types import definition

# Items of zero encoded bytes (null, empty records, fixed(0)) let a count alone ask for any number of values: a
# 6-byte payload would stand for a million nulls. Arrays of such items are rare and short in real data.
ZERO_WIDTH_ITEMS = 1 << 16


class _CountingDecoder(BinaryDecoder):
    """fastavro's binary decoder, refusing more than `ZERO_WIDTH_ITEMS` array or map items that take no bytes
    (items that take bytes are bounded by the payload already)."""

    def __init__(self, fo: io.BytesIO) -> None:
        super().__init__(fo)
        self.free = ZERO_WIDTH_ITEMS

    def _counted(self) -> Any:
        tell = self.fo.tell
        for item in super()._iter_array_or_map():
            at = tell()
            yield item
            if tell() == at:
                self.free -= 1
                if self.free < 0:
                    raise PayloadError(f"more than {ZERO_WIDTH_ITEMS} array items of zero bytes (null, empty "
                                       "records, fixed(0)) in one payload")

    iter_array = _counted
    iter_map = _counted


def guarded_read(writer: Any, writer_named: Mapping[str, Any], reader: Any, reader_named: Mapping[str, Any],
                 named_types: bool) -> Callable[[bytes], Any]:
    """fastavro's pure-Python reader of parsed schemas (bounded by Python's recursion limit), with a bound on
    zero-byte items; `reader` is None to read with the writer's schema."""
    options = {"return_named_type": named_types}

    def read(payload: bytes) -> Any:
        named = {"writer": dict(writer_named), "reader": dict(reader_named)}
        return _read_py.read_data(_CountingDecoder(io.BytesIO(payload)), writer, named, reader, options)

    return read


class StrictPayload(io.BytesIO):
    """A payload that refuses a read past its end, for fastavro's compiled reader where it may skip arrays blindly.

    Skipping a writer field the reader lacks, fastavro reads each item of an array of fixed-size values (fixed,
    boolean, float, double, records of only those) without checking the bytes were there: a count of 2^62 in ten
    bytes kept it reading nothing for ever (measured: 8 million items in 5 s). Its other reads check their length,
    so only the schema pairs `blind_skips` names pay for this Python-level read.
    """

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if size is not None and 0 < size != len(data):
            raise EOFError(f"Expected {size} bytes, read {len(data)}")
        return data


def blind_skips(schema: Any, named: Mapping[str, Any]) -> bool:
    """Whether a parsed writer schema holds an array of fixed-size items, which fastavro's compiled reader skips
    without noticing the end of the payload (`StrictPayload`)."""
    stack, seen = [schema], set()
    while stack:
        node = definition(stack.pop(), named)
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict) and id(node) not in seen:
            seen.add(id(node))
            if node["type"] == "array" and _fixed_size(node["items"], named, frozenset()):
                return True
            stack.extend(_children(node, named, records_only=False))
    return False


def _fixed_size(node: Any, named: Mapping[str, Any], path: frozenset[str]) -> bool:
    """Whether values of `node` are read without a varint (no length, count, branch or symbol to run out on)."""
    node = definition(node, named)
    if isinstance(node, str):
        return node in ("boolean", "float", "double")
    if isinstance(node, list):
        return False
    if node["type"] == "fixed":
        return True
    if node["type"] in ("record", "error") and node["name"] not in path:
        inner = path | {node["name"]}
        return bool(node["fields"]) and all(_fixed_size(f["type"], named, inner) for f in node["fields"])
    return False


def risks(schema: Any, named: Mapping[str, Any]) -> tuple[bool, bool]:
    """(recursive, unbounded) of a parsed writer schema: whether a record contains itself, and whether a value
    can repeat for no bytes (array items of zero width, a record containing itself through records alone)."""
    records: dict[str, Any] = {}
    items: list[Any] = []
    stack = [schema]
    while stack:
        node = definition(stack.pop(), named)
        if isinstance(node, dict):
            if node["type"] in ("record", "error"):
                if node["name"] in records:
                    continue
                records[node["name"]] = node
            elif node["type"] == "array":
                items.append(node["items"])
        stack.extend(_children(node, named, records_only=False))
    recursive = any(_reaches(r, name, named, records_only=False) for name, r in records.items())
    unbounded = (any(_reaches(r, name, named, records_only=True) for name, r in records.items())
                 or any(_zero_width(item, named) for item in items))
    return recursive, unbounded


def _children(node: Any, named: Mapping[str, Any], records_only: bool) -> list[Any]:
    node = definition(node, named)
    if isinstance(node, list):
        return [] if records_only else node
    if not isinstance(node, dict):
        return []
    kind = node["type"]
    if kind in ("record", "error"):
        return [f["type"] for f in node["fields"]]
    if records_only:
        return []
    return [node["items"]] if kind == "array" else [node["values"]] if kind == "map" else []


def _reaches(record: Any, name: str, named: Mapping[str, Any], records_only: bool) -> bool:
    """Whether a record named `name` lies inside `record` (through record fields alone if `records_only`)."""
    stack, seen = list(_children(record, named, records_only)), set()
    while stack:
        node = definition(stack.pop(), named)
        if isinstance(node, dict) and node["type"] in ("record", "error"):
            if node["name"] == name:
                return True
            if node["name"] in seen:
                continue
            seen.add(node["name"])
        stack.extend(_children(node, named, records_only))
    return False


def _zero_width(node: Any, named: Mapping[str, Any], path: frozenset[str] = frozenset()) -> bool:
    """Whether values of `node` take no bytes (null, fixed(0), records of such fields only)."""
    node = definition(node, named)
    if isinstance(node, str):
        return node == "null"
    if isinstance(node, list):
        return False
    if node["type"] == "fixed":
        return bool(node["size"] == 0)
    if node["type"] in ("record", "error"):
        if node["name"] in path:
            return True
        return all(_zero_width(f["type"], named, path | {node["name"]}) for f in node["fields"])
    return False

"""Record-field defaults of fastavro-parsed schemas made the values a reader fills in.

Avro's JSON writes a `bytes` or `fixed` default as a string of code points 0-255, one per byte (ISO-8859-1), and
fastavro hands a default back exactly as parsed: a reader field added with a bytes default came out as text
(its UTF-8, not its bytes, in the binary column), and one with a decimal default failed every record. fastavro
refuses bytes in a default at parse time but reads an already-parsed schema as it is, so the defaults are
converted in place once the schema is parsed, as Java Avro converts them (characters past 255 become `?`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_spark.formats.avro.types import definition


def convert_defaults(schema: Any, named: Mapping[str, Any]) -> None:
    """Turn the bytes and fixed values inside every record field default of `schema` and of the named types in
    `named` (both fastavro-parsed) into bytes, in place."""
    seen: set[int] = set()
    stack: list[Any] = [schema, *named.values()]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        kind = node.get("type")
        if kind in ("record", "error"):
            for field in node["fields"]:
                if "default" in field:
                    field["default"] = _value(field["default"], field["type"], named, 0)
                stack.append(field["type"])
        elif kind == "array":
            stack.append(node["items"])
        elif kind == "map":
            stack.append(node["values"])
        elif isinstance(kind, (dict, list)):
            stack.append(kind)


def _value(value: Any, node: Any, named: Mapping[str, Any], depth: int) -> Any:
    """`value`, a JSON default of `node`, with its bytes and fixed strings as bytes; anything that does not fit
    the type is left as given (fastavro's parse checked the defaults already)."""
    if depth > 100:  # a default is finite JSON, but a recursive type must not make this walk unbounded
        return value
    node = definition(node, named)
    if isinstance(node, list):
        return _value(value, node[0], named, depth + 1) if node else value  # a union's default is its first branch's
    kind = node if isinstance(node, str) else node["type"]
    if kind in ("bytes", "fixed") and isinstance(value, str):
        return value.encode("latin-1", "replace")
    if kind in ("record", "error") and isinstance(value, dict):
        types = {f["name"]: f["type"] for f in node["fields"]}
        return {k: _value(v, types[k], named, depth + 1) if k in types else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_value(v, node["items"], named, depth + 1) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _value(v, node["values"], named, depth + 1) for k, v in value.items()}
    return value

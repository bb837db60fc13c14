"""Messages as the JSON converters Kafka generates for them write them (what its tools print).

Field names become lowerCamelCase of the declared name, fields come in declaration order, UUIDs are
URL-safe base64 without padding, and the output is compact, with Jackson's escapes.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_spark.protocol.schema import Field

_LOWER_HEX_ESCAPE = re.compile(r"\\u([0-9a-f]{4})")


def json_name(name: str) -> str:
    """Kafka's JSON name for a field declared as `name` (snake_case here, UpperCamel in Kafka)."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _string(text: str) -> str:
    # Jackson writes \uXXXX escapes with upper-case hex; Python's json writes lower-case.
    return _LOWER_HEX_ESCAPE.sub(lambda m: "\\u" + m.group(1).upper(), json.dumps(text, ensure_ascii=False))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, uuid.UUID):
        return _string(base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii"))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _string(base64.b64encode(bytes(value)).decode("ascii"))
    return str(value)


def kafka_json(fields: Sequence[Field], value: Mapping[str, Any]) -> str:
    """`value` (decoded with `fields`) as Kafka's JSON converter prints it."""
    parts = []
    for f in fields:
        v = value[f.name]
        if f.type == "[]struct":
            text = "[" + ",".join(kafka_json(f.fields, item) for item in v) + "]"
        elif f.type == "struct":
            text = "null" if v is None else kafka_json(f.fields, v)
        elif f.type.startswith("[]"):
            text = "[" + ",".join(_scalar(item) for item in v) + "]"
        else:
            text = _scalar(v)
        parts.append(f'"{json_name(f.name)}":{text}')
    return "{" + ",".join(parts) + "}"


__all__ = ["json_name", "kafka_json"]

"""On-disk format of the golden vectors: one .hex file per response frame and a JSON index.

Request bodies are stored as JSON; the two value types JSON lacks are tagged:
``{"$uuid": "..."}`` for topic ids and ``{"$bytes": "<hex>"}`` for byte strings.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_spark.protocol import get_api
from kafka_spark.protocol.schema import Field

GOLDEN = Path(__file__).parent / "golden"
INDEX = GOLDEN / "index.json"
HEX_LINE = 64


def to_json(value: Any) -> Any:
    """A request body as JSON-ready data."""
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    return value


def from_json(value: Any) -> Any:
    """The inverse of `to_json`."""
    if isinstance(value, dict):
        if value.keys() == {"$uuid"}:
            return uuid.UUID(value["$uuid"])
        if value.keys() == {"$bytes"}:
            return bytes.fromhex(value["$bytes"])
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def _on_the_wire(fields: tuple[Field, ...], version: int, value: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if version not in field.versions:
            continue
        item = value[field.name]
        if field.type == "struct" and item is not None:
            item = _on_the_wire(field.fields, version, item)
        elif field.type == "[]struct" and item is not None:
            item = [_on_the_wire(field.fields, version, element) for element in item]
        out[field.name] = item
    return out


def request_as_sent(api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded request body without the fields `version` does not carry (the decoder fills them in)."""
    return _on_the_wire(get_api(api_key).request.fields, version, body)


def dump_index(index: Mapping[str, Any]) -> str:
    """index.json text: one line per vector keeps the file short and a re-capture diff readable."""
    head = {k: v for k, v in index.items() if k != "vectors"}
    lines = [json.dumps(v, sort_keys=True) for v in index["vectors"]]
    text = json.dumps(head, indent=1, sort_keys=True)
    # the head ends in "\n}": reopen it to append the vectors
    return text[:-2] + ',\n "vectors": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def write_hex(path: Path, data: bytes) -> None:
    """Hex text wrapped at a fixed width, so a diff of a re-capture stays readable."""
    text = data.hex()
    path.write_text("\n".join(text[i:i + HEX_LINE] for i in range(0, len(text), HEX_LINE)) + "\n")


def read_hex(path: Path) -> bytes:
    return bytes.fromhex("".join(path.read_text().split()))


def load_index() -> dict[str, Any]:
    return json.loads(INDEX.read_text())

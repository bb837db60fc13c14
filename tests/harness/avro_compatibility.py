"""Avro schema resolution as a compatibility check, for the test schema registry: can a reader schema read
data written with a writer schema (Avro specification, "Schema Resolution")? Works on schemas parsed by
fastavro, whose named types are fully qualified and listed under `__named_schemas`."""

from __future__ import annotations

from typing import Any

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
# writer type -> reader types that read it
_PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
               "string": {"bytes"}, "bytes": {"string"}}


def incompatibilities(level: str, new: Any, previous: list[Any]) -> list[str]:
    """Why `new` may not follow `previous` (oldest first, all parsed) at compatibility `level`; [] when it may.
    BACKWARD: the new schema reads data of the previous ones; FORWARD: they read the new one's; FULL: both.
    Without _TRANSITIVE only the latest previous schema counts."""
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    direction = level.removesuffix("_TRANSITIVE")
    found: list[str] = []
    for old in reversed(against):
        if direction in ("BACKWARD", "FULL"):
            found += [f"the new schema cannot read the old: {p}" for p in reader_problems(new, old)]
        if direction in ("FORWARD", "FULL"):
            found += [f"the old schema cannot read the new: {p}" for p in reader_problems(old, new)]
    return found


def reader_problems(reader: Any, writer: Any) -> list[str]:
    """Why `reader` cannot read data written with `writer`; [] when it can."""
    return _Resolution(reader, writer).problems(reader, writer, "$")


class _Resolution:
    def __init__(self, reader: Any, writer: Any) -> None:
        self.reader_names = _names(reader)
        self.writer_names = _names(writer)
        self.visiting: set[tuple[str, str]] = set()  # record pairs under check: recursive types end here

    def problems(self, reader: Any, writer: Any, path: str) -> list[str]:
        r, w = _resolve(reader, self.reader_names), _resolve(writer, self.writer_names)
        rk, wk = _kind(r), _kind(w)
        if wk == "union":  # every branch the writer may have written must be readable
            return [p for branch in w for p in self.problems(r, branch, path)]
        if rk == "union":
            if any(not self.problems(branch, w, path) for branch in r):
                return []
            return [f"{path}: no branch of the reader's union reads the writer's {wk}"]
        if rk != wk:
            if rk in _PROMOTIONS.get(wk, ()):
                return []
            return [f"{path}: the reader's {rk} cannot read the writer's {wk}"]
        if rk in ("record", "enum", "fixed") and not _same_name(r, w):
            return [f"{path}: the reader's {rk} {r['name']} is not the writer's {w['name']}"]
        if rk == "record":
            return self._record(r, w, path)
        if rk == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and "default" not in r:
                return [f"{path}: the reader's enum {r['name']} lacks the symbols {missing} and has no default"]
        if rk == "fixed" and r["size"] != w["size"]:
            return [f"{path}: fixed {r['name']} has size {r['size']} in the reader and {w['size']} in the writer"]
        if rk == "array":
            return self.problems(r["items"], w["items"], f"{path}[]")
        if rk == "map":
            return self.problems(r["values"], w["values"], f"{path}{{}}")
        return []

    def _record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[str]:
        pair = (r["name"], w["name"])
        if pair in self.visiting:
            return []
        self.visiting.add(pair)
        written = {f["name"]: f for f in w["fields"]}
        found: list[str] = []
        for field in r["fields"]:
            match = next((written[n] for n in (field["name"], *field.get("aliases", ())) if n in written), None)
            where = f"{path}.{field['name']}"
            if match is None:
                if "default" not in field:
                    found.append(f"{where}: the reader's field is not in the writer's data and has no default")
            else:
                found += self.problems(field["type"], match["type"], where)
        self.visiting.discard(pair)
        return found


def _names(schema: Any) -> dict[str, Any]:
    return schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}


def _resolve(schema: Any, names: dict[str, Any]) -> Any:
    if isinstance(schema, str) and schema not in _PRIMITIVES:
        return names[schema]
    return schema


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, str):
        return schema
    return str(schema["type"])


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Avro matches unqualified names, or a reader alias (qualified by the reader's namespace) naming the writer."""
    if _short(reader["name"]) == _short(writer["name"]):
        return True
    namespace = reader["name"].rpartition(".")[0]
    return any((a if "." in a or not namespace else f"{namespace}.{a}") == writer["name"]
               for a in reader.get("aliases", ()))

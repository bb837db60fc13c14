"""The in-memory state of the tests' schema registry (schema_registry.py serves it over HTTP): subjects, versions
and ids, registration with validation (AVRO with fastavro, JSON with jsonschema's meta-schema check, PROTOBUF as a
base64 FileDescriptorProto or .proto text compiled with protoc), compatibility levels, soft and permanent deletes,
and the errors with Confluent's codes."""

from __future__ import annotations

import base64
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.avro_compatibility import incompatibilities

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TYPES = ("AVRO", "PROTOBUF", "JSON")
_MAX_VERSION = 2**31 - 1
# the error codes Confluent's registry gives for these statuses when a test injects them
FAULT_CODES = {401: 40101, 403: 40301, 429: 42901, 500: 50001, 502: 50003, 503: 50003}


class RegistryError(Exception):
    """An error answer: HTTP status, Confluent error code, message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _subject_missing(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def _invalid(message: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {message}")


@dataclass
class _Version:
    version: int
    id: int
    deleted: bool = False


class RegistryState:
    """The registry's data and rules, without HTTP. Every method runs under the server's lock."""

    def __init__(self) -> None:
        self.schemas: list[dict[str, Any]] = []  # id - 1 -> {"schema", "schemaType", "references"}
        self.ids: dict[tuple[str, str, str], int] = {}  # (type, canonical text, references) -> id
        self.subjects: dict[str, list[_Version]] = {}
        self.config: dict[str | None, str] = {None: "BACKWARD"}
        self.mode: dict[str | None, str] = {None: "READWRITE"}

    # ---- schemas --------------------------------------------------------------------------------

    def schema(self, schema_id: int) -> dict[str, Any]:
        if not 1 <= schema_id <= len(self.schemas):
            raise RegistryError(404, 40403, f"Schema {schema_id} not found")
        return self.schemas[schema_id - 1]

    def versions_of(self, schema_id: int) -> list[dict[str, Any]]:
        self.schema(schema_id)
        return [{"subject": s, "version": v.version} for s, vs in sorted(self.subjects.items())
                for v in vs if v.id == schema_id and not v.deleted]

    def live(self, subject: str, deleted: bool = False) -> list[_Version]:
        versions = [v for v in self.subjects.get(subject, []) if deleted or not v.deleted]
        if not versions:
            raise _subject_missing(subject)
        return versions

    def version(self, subject: str, text: str, deleted: bool = False) -> _Version:
        versions = self.live(subject, deleted)
        if text in ("latest", "-1"):
            return versions[-1]
        number = _version_number(text)
        for v in versions:
            if v.version == number:
                return v
        raise RegistryError(404, 40402, f"Version {number} not found.")

    def answer(self, subject: str, v: _Version, fmt: str | None = None) -> dict[str, Any]:
        return {"subject": subject, "version": v.version, "id": v.id, **self.body(v.id, fmt)}

    def body(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        """The schema as Confluent answers it: schemaType left out for AVRO, references only when there are any."""
        stored = self.schema(schema_id)
        out: dict[str, Any] = {"schema": stored["schema"]}
        if stored["schemaType"] != "AVRO":
            out["schemaType"] = stored["schemaType"]
        if stored["schemaType"] == "PROTOBUF" and fmt == "serialized" and not _is_descriptor(stored["schema"]):
            out["schema"] = base64.b64encode(self._proto(stored).SerializeToString()).decode()
        if stored["references"]:
            out["references"] = stored["references"]
        return out

    # ---- registering --------------------------------------------------------------------------------

    def register(self, subject: str, request: dict[str, Any]) -> int:
        if self.mode.get(subject, self.mode[None]) == "READONLY":
            raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode")
        new = self.validated(request)
        key = _key(new)
        existing = self.subjects.get(subject, [])
        for v in existing:
            if not v.deleted and _key(self.schemas[v.id - 1]) == key:
                return v.id
        live = [self.schemas[v.id - 1] for v in existing if not v.deleted]
        problems = self.problems(self.level(subject), new, live)
        if problems:
            raise RegistryError(409, 409, f"Schema being registered is incompatible with an earlier schema for "
                                          f"subject \"{subject}\", details: {problems}")
        schema_id = self.ids.get(key)
        if schema_id is None:
            self.schemas.append(new)
            schema_id = self.ids[key] = len(self.schemas)
        number = max((v.version for v in existing), default=0) + 1
        self.subjects.setdefault(subject, []).append(_Version(number, schema_id))
        return schema_id

    def lookup(self, subject: str, request: dict[str, Any], deleted: bool) -> dict[str, Any]:
        key = _key(self.validated(request))
        for v in self.live(subject, deleted):
            if _key(self.schemas[v.id - 1]) == key:
                return self.answer(subject, v)
        raise RegistryError(404, 40403, "Schema not found")

    def level(self, subject: str) -> str:
        return self.config.get(subject, self.config[None])

    def problems(self, level: str, new: dict[str, Any], previous: list[dict[str, Any]]) -> list[str]:
        """Why `new` may not follow `previous` (oldest first) at `level`."""
        if level == "NONE" or not previous:
            return []
        if any(p["schemaType"] != new["schemaType"] for p in previous):
            return [f"the schema type changed to {new['schemaType']}"]
        if new["schemaType"] != "AVRO":
            return []
        return incompatibilities(level, self._avro(new), [self._avro(p) for p in previous])

    def validated(self, request: dict[str, Any]) -> dict[str, Any]:
        text, kind = request.get("schema"), request.get("schemaType") or "AVRO"
        if not isinstance(text, str):
            raise _invalid("the request has no schema string")
        if kind not in TYPES:
            raise RegistryError(422, 42201, f"Invalid schema type {kind}")
        references = []
        for ref in request.get("references") or []:
            try:
                name, subject, version = str(ref["name"]), str(ref["subject"]), int(ref["version"])
                self.version(subject, str(version))
            except (KeyError, TypeError, ValueError, RegistryError) as exc:
                raise _invalid(f"reference {ref!r} cannot be resolved ({exc})") from None
            references.append({"name": name, "subject": subject, "version": version})
        schema = {"schema": text, "schemaType": kind, "references": references}
        try:
            if kind == "AVRO":
                self._avro(schema)
            elif kind == "JSON":
                _check_json(text)
            elif not _is_descriptor(text):
                self._proto(schema)
        except RegistryError:
            raise
        except Exception as exc:  # each library's own error says what is wrong
            raise _invalid(f"{type(exc).__name__}: {exc}") from None
        return schema

    def _referenced(self, schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(name, schema) of every schema `schema` references, dependencies first."""
        out: list[tuple[str, dict[str, Any]]] = []
        for ref in schema["references"]:
            found = self.schemas[self.version(ref["subject"], str(ref["version"]), deleted=True).id - 1]
            out += [*self._referenced(found), (ref["name"], found)]
        return out

    def _avro(self, schema: dict[str, Any]) -> Any:
        import fastavro

        named: dict[str, Any] = {}
        for _, ref in self._referenced(schema):
            fastavro.parse_schema(json.loads(ref["schema"]), named_schemas=named)
        return fastavro.parse_schema(json.loads(schema["schema"]), named_schemas=named)

    def _proto(self, schema: dict[str, Any]) -> Any:
        """The FileDescriptorProto of a .proto text schema, compiled by protoc with its references beside it."""
        import importlib.resources

        from google.protobuf import descriptor_pb2
        from grpc_tools import protoc  # type: ignore[import-untyped]

        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            known = descriptor_pb2.FileDescriptorSet()
            for name, ref in self._referenced(schema):
                if _is_descriptor(ref["schema"]):
                    known.file.add().MergeFromString(base64.b64decode(ref["schema"]))
                    known.file[-1].name = name
                else:
                    (root / name).parent.mkdir(parents=True, exist_ok=True)
                    (root / name).write_text(ref["schema"])
            (root / "schema.proto").write_text(schema["schema"])
            args = ["protoc", f"-I{root}", f"-I{importlib.resources.files('grpc_tools') / '_proto'}",
                    f"--descriptor_set_out={root / 'out.pb'}"]
            if known.file:
                (root / "known.pb").write_bytes(known.SerializeToString())
                args.append(f"--descriptor_set_in={root / 'known.pb'}")
            if protoc.main([*args, "schema.proto"]) != 0:
                raise _invalid("protoc cannot compile the .proto text")
            out = descriptor_pb2.FileDescriptorSet.FromString((root / "out.pb").read_bytes())
        return out.file[-1]

    # ---- deleting -------------------------------------------------------------------------------

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        versions = self.subjects.get(subject)
        if not versions:
            raise _subject_missing(subject)
        if permanent:
            if any(not v.deleted for v in versions):
                raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                                "permanently deleted")
            del self.subjects[subject]
            return [v.version for v in versions]
        live = [v for v in versions if not v.deleted]
        if not live:
            raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true to "
                                            "delete permanently")
        for v in live:
            v.deleted = True
        return [v.version for v in live]

    def delete_version(self, subject: str, text: str, permanent: bool) -> int:
        v = self.version(subject, text, deleted=True)
        if permanent:
            if not v.deleted:
                raise RegistryError(404, 40407, f"Subject '{subject}' Version {v.version} was not deleted first "
                                                "before being permanently deleted")
            self.subjects[subject].remove(v)
            if not self.subjects[subject]:
                del self.subjects[subject]
        elif v.deleted:
            raise RegistryError(404, 40406, f"Subject '{subject}' Version {v.version} was soft deleted. Set "
                                            "permanent=true to delete permanently")
        else:
            v.deleted = True
        return v.version


def _version_number(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= _MAX_VERSION:
        raise RegistryError(422, 42202, f"The specified version '{text}' is not a valid version id. Allowed "
                                        "values are between [1, 2^31-1] and the string \"latest\"")
    return number


def _is_descriptor(text: str) -> bool:
    """Whether `text` is a base64 FileDescriptorProto rather than .proto text."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        raw = base64.b64decode(text, validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (ValueError, DecodeError):
        return False
    return bool(raw) and bool(proto.name or proto.message_type or proto.enum_type)


def _check_json(text: str) -> None:
    import jsonschema

    document = json.loads(text)
    if not isinstance(document, (dict, bool)):
        raise _invalid("a JSON Schema is an object or a boolean")
    jsonschema.validators.validator_for(document).check_schema(document)


def _key(schema: dict[str, Any]) -> tuple[str, str, str]:
    """What makes two registrations the same schema: type, text (whitespace aside for JSON forms), references."""
    text = schema["schema"]
    if schema["schemaType"] != "PROTOBUF":
        text = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return schema["schemaType"], text, json.dumps(schema["references"], sort_keys=True)

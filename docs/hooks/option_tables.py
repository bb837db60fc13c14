"""The options reference as Markdown tables: names and defaults from the code, meanings from options.toml.

Each option is declared once: its name and default where the code parses it (kafka_spark/spark/declared.py asks
the parsers; LoadOptions and StreamOptions are dataclasses), its meaning and Spark's name for it in
docs/reference/options.toml. `missing_and_unknown` is what the test of the two checks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tomllib

from kafka_spark.sink.options import LoadOptions, StreamOptions
from kafka_spark.spark import declared

MEANINGS = Path(__file__).resolve().parents[1] / "reference" / "options.toml"
SAME = "same name"
# A default that differs by mode, as declared.source_defaults() words it.
_PAIR = re.compile(r"(\S+) \((\w+)\)")
_BY_MODE = re.compile(r"\S+ \(\w+\)(, \S+ \(\w+\))+")
OURS = "ours"


def meanings() -> dict[str, dict[str, dict[str, str]]]:
    """options.toml: section -> option -> {meaning, spark, default}."""
    return tomllib.loads(MEANINGS.read_text())


def _fields(cls: type, below: type | None = None) -> dict[str, Any]:
    """A dataclass's fields and defaults (callables and factories shown as none), leaving out `below`'s."""
    inherited = {f.name for f in dataclasses.fields(below)} if below else set()
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in inherited:
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = dataclasses.MISSING
    return out


def declared_sections() -> dict[str, dict[str, Any]]:
    """section -> option name -> its default from the code (None: no default; MISSING: required)."""
    source = declared.source_defaults()
    log = declared.log_source_defaults()
    sink = declared.sink_defaults()
    return {
        "source": {name: source.get(name) for name in declared.source_options()},
        "log": {name: log.get(name) for name in declared.log_source_options()},
        "sink": {name: sink.get(name) for name in declared.sink_options()},
        "client": declared.client_properties(),
        "zookeeper": declared.zookeeper_properties(),
        "registry": declared.registry_settings(),
        "load": _fields(LoadOptions),
        "stream": _fields(StreamOptions, below=LoadOptions),
    }


def missing_and_unknown() -> tuple[list[str], list[str]]:
    """Options the code declares that options.toml does not explain, and entries naming no declared option.

    Sink options are compared case-insensitively: their parser declares them lower-cased.
    """
    docs, code = meanings(), declared_sections()
    missing, unknown = [], []
    for section, names in code.items():
        documented = {_key(section, n): n for n in docs.get(section, {})}
        declared_names = {_key(section, n): n for n in names}
        missing += [f"[{section}] {declared_names[k]}" for k in sorted(set(declared_names) - set(documented))]
        unknown += [f"[{section}] {documented[k]}" for k in sorted(set(documented) - set(declared_names))]
    unknown += [f"[{section}]" for section in sorted(set(docs) - set(code))]
    return missing, unknown


def doubly_declared_defaults() -> list[str]:
    """Entries of options.toml that give a default the code already declares (it would drift)."""
    docs, code = meanings(), declared_sections()
    return [f"[{section}] {name}" for section, entries in docs.items() for name, entry in entries.items()
            if "default" in entry and _has_value(_code_default(code.get(section, {}), section, name))]


def _key(section: str, name: str) -> str:
    return name.lower() if section == "sink" else name


def _code_default(names: Mapping[str, Any], section: str, name: str) -> Any:
    return next((v for k, v in names.items() if _key(section, k) == _key(section, name)), None)


def _has_value(value: Any) -> bool:
    return value is not None and value is not dataclasses.MISSING and value != () and value != {}


def _default_cell(value: Any, entry: Mapping[str, str]) -> str:
    if "default" in entry:
        return entry["default"]
    if value is dataclasses.MISSING:
        return "required"
    if not _has_value(value):
        return "—"
    if isinstance(value, bool):
        return f"`{value}`"
    if isinstance(value, str) and not value:
        return '`""`'
    if isinstance(value, str) and _BY_MODE.fullmatch(value):  # "earliest (batch), latest (stream)"
        return _BY_MODE.sub(lambda m: ", ".join(f"`{v}` ({mode})" for v, mode in _PAIR.findall(m.group(0))), value)
    return f"`{value}`"


def _spark_cell(entry: Mapping[str, str]) -> str:
    return entry.get("spark", SAME)


def _cell(text: str) -> str:
    """Table text: `|` escaped outside code spans (Markdown keeps them inside), no line breaks."""
    parts = text.replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def table(section: str, *, prefix: str = "") -> str:
    """One section as a Markdown table: option, default, meaning, Spark's equivalent."""
    docs, code = meanings()[section], declared_sections()[section]
    by_key = {_key(section, n): n for n in docs}
    rows = ["| option | default | meaning | Spark's equivalent |", "|---|---|---|---|"]
    for name in code:
        shown = by_key[_key(section, name)]
        entry = docs[shown]
        rows.append(f"| `{prefix}{shown}` | {_cell(_default_cell(code[name], entry))} | {_cell(entry['meaning'])} "
                    f"| {_cell(_spark_cell(entry))} |")
    return "\n".join(rows)


def client_table() -> str:
    """The client properties, secret ones marked."""
    secret = declared.secret_client_properties()
    docs, code = meanings()["client"], declared_sections()["client"]
    rows = ["| property | default | meaning | Java client |", "|---|---|---|---|"]
    for name, default in code.items():
        entry = docs[name]
        java = entry.get("spark", "same name")
        mark = " (secret)" if name in secret and "Secret" not in entry["meaning"] else ""
        rows.append(f"| `{name}` | {_cell(_default_cell(default, entry))} | {_cell(entry['meaning'] + mark)} "
                    f"| {_cell(java)} |")
    return "\n".join(rows)


def registry_table() -> str:
    """The schema registry settings, secret ones marked; the last column is Confluent's Python client's name."""
    secret = declared.secret_registry_settings()
    docs, code = meanings()["registry"], declared_sections()["registry"]
    rows = ["| setting | default | meaning | Confluent's Python client |", "|---|---|---|---|"]
    for name, default in code.items():
        entry = docs[name]
        mark = " (secret)" if name in secret and "Secret" not in entry["meaning"] else ""
        rows.append(f"| `{name}` | {_cell(_default_cell(default, entry))} | {_cell(entry['meaning'] + mark)} "
                    f"| {_cell(_spark_cell(entry))} |")
    return "\n".join(rows)


def sink_producer_defaults() -> str:
    """The producer properties a `pykafka` write sets unless they are given."""
    return "\n".join(f"- `{name}`: `{value}`" for name, value in declared.sink_defaults().items()
                     if name.startswith("kafka."))


def ignored_list() -> str:
    """The Java client properties accepted and ignored."""
    return ", ".join(f"`{name}`" for name in declared.ignored_client_properties())


GENERATED: dict[str, Callable[[], str]] = {
    "source-options": lambda: table("source"),
    "log-options": lambda: table("log"),
    "sink-options": lambda: table("sink"),
    "sink-producer-defaults": sink_producer_defaults,
    "client-properties": client_table,
    "ignored-client-properties": ignored_list,
    "zookeeper-properties": lambda: table("zookeeper", prefix="kafka."),
    "registry-settings": registry_table,
    "load-options": lambda: table("load"),
    "stream-options": lambda: table("stream"),
}

"""The documentation and the code agree: every option the code declares is explained once (docs/reference/
options.toml), and the pages show only flags, options and arguments that the code accepts.

The reference pages themselves are generated from the code when the site is built (docs/hooks/), so what is
checked here is what a person wrote: the meanings, and the examples on every page and in the README.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
sys.path.insert(0, str(DOCS / "hooks"))

import cli_tables  # noqa: E402  (docs/hooks is not a package: it is put on the path above, as MkDocs does)
import option_tables  # noqa: E402
import reference  # noqa: E402

from kafka_spark.sink.options import LoadOptions, StreamOptions  # noqa: E402
from kafka_spark.spark import declared  # noqa: E402

PAGES = sorted([*DOCS.rglob("*.md"), REPO / "README.md"])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Spark's own options that appear beside ours in examples (a Delta sink's checkpoint, its schema merging, a
# snapshot read back by time travel).
SPARK_OPTIONS = {"checkpointlocation", "mergeschema", "versionasof"}
# The jobs take the flags of these commands.
JOBS = {"jobs/kafka_to_delta.py": "load", "jobs/stream_to_delta.py": "stream"}


def blocks(language: str) -> Iterator[tuple[Path, str]]:
    """(page, code) of every fenced block in that language on every page and in the README."""
    for page in PAGES:
        for match in FENCE.finditer(page.read_text()):
            if match.group(1) == language:
                yield page, match.group(2)


def test_every_declared_option_is_explained_once() -> None:
    missing, unknown = option_tables.missing_and_unknown()
    assert missing == [], f"options the code declares with no entry in {option_tables.MEANINGS}: {missing}"
    assert unknown == [], f"entries of {option_tables.MEANINGS} naming no option the code declares: {unknown}"
    assert option_tables.doubly_declared_defaults() == [], "a default the code declares is also in options.toml"


def test_every_entry_has_a_meaning() -> None:
    empty = [f"[{section}] {name}" for section, entries in option_tables.meanings().items()
             for name, entry in entries.items() if not entry.get("meaning", "").strip()]
    assert empty == []


def test_the_generated_tables_list_every_declared_name() -> None:
    page = reference.fill((DOCS / "reference" / "options.md").read_text())
    for name in [*declared.source_options(), *declared.log_source_options(), *declared.client_properties()]:
        assert f"`{name}`" in page or f"`kafka.{name}`" in page, name
    cli = reference.fill((DOCS / "reference" / "cli.md").read_text())
    for name, parser in cli_tables.commands().items():
        assert f"## `kafka-spark {name}`" in cli
        for action in cli_tables.visible_flags(parser):
            assert all(f"`{s}" in cli for s in action.option_strings), (name, action.option_strings)


def test_every_marker_names_a_generator() -> None:
    for page in PAGES:
        for name in reference.MARKER.findall(page.read_text()):
            assert name in reference.GENERATED, f"{page}: <!-- generated: {name} -->"


def _commands(code: str) -> Iterator[tuple[str, list[str]]]:
    """(command, arguments) for each `kafka-spark COMMAND ...` or job in a shell block."""
    parsers = cli_tables.commands()
    for line in code.replace("\\\n", " ").splitlines():
        for part in re.split(r"[|;&]+", line.split(" #")[0]):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            for i, word in enumerate(words):
                rest = words[i + 1:]
                if word in JOBS:
                    yield JOBS[word], rest
                elif (word.endswith(("kafka-spark", "kafka_spark/cli/main.py")) or word in (
                        "kafka_spark", "kafka_spark.cli")) and rest and rest[0] in parsers:
                    yield rest[0], rest[1:]


def test_pages_show_only_flags_the_commands_take() -> None:
    parsers = cli_tables.commands()
    seen, wrong = 0, []
    for page, code in blocks("bash"):
        for command, args in _commands(code):
            accepted = cli_tables.every_flag(parsers[command]) | {"-h", "--help"}
            for arg in args:
                flag = arg.split("=", 1)[0]
                if flag.startswith("--") and flag != "--":
                    seen += 1
                    if flag not in accepted:
                        wrong.append(f"{page.relative_to(REPO)}: kafka-spark {command} {flag}")
    assert wrong == []
    assert seen > 30  # the check reads the examples it is meant to


def _accepted_options() -> set[str]:
    client = [*declared.client_properties(), *declared.zookeeper_properties()]
    names = [*declared.source_options(), *declared.log_source_options(), *declared.sink_options(),
             *(f"kafka.{p}" for p in client), *declared.registry_settings()]
    return {n.lower() for n in names} | SPARK_OPTIONS


def test_examples_use_only_options_the_sources_and_sink_take() -> None:
    accepted = _accepted_options()
    seen, wrong = 0, []
    for page, code in blocks("python"):
        for name in re.findall(r"\.option\(\s*\"([^\"]+)\"", code):
            seen += 1
            if name.lower() not in accepted and not name.lower().startswith("fs."):
                wrong.append(f"{page.relative_to(REPO)}: .option({name!r})")
    assert wrong == []
    assert seen > 20


@pytest.mark.parametrize("cls", [LoadOptions, StreamOptions])
def test_examples_pass_only_arguments_the_options_classes_take(cls: type) -> None:
    fields = set(option_tables._fields(cls))
    seen, wrong = 0, []
    for page, code in blocks("python"):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cls.__name__:
                seen += 1
                wrong += [f"{page.relative_to(REPO)}: {cls.__name__}({k.arg}=...)" for k in node.keywords
                          if k.arg is not None and k.arg not in fields]
    assert wrong == []
    assert seen >= 1


def _vocabulary_rows() -> Iterator[tuple[list[str], list[str], list[str]]]:
    """(flags, old spellings, commands) of each row of docs/cli.md's vocabulary table; "the same" repeats the
    commands of the row above, "every command" names them all."""
    parsers = cli_tables.commands()
    previous: list[str] = []
    for line in (DOCS / "cli.md").read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) != 4 or not cells[0].startswith("`-"):
            continue
        flags = [w for code in re.findall(r"`([^`]+)`", cells[0]) for w in code.split() if w.startswith("-")]
        old = [w for w in re.findall(r"`([^`]+)`", cells[2]) if w.startswith("-")]
        if cells[3] == "the same":
            names = previous
        elif cells[3].startswith("every command"):
            names = list(parsers)
        else:
            names = [n for n in re.split(r"[\s,;:]+", cells[3]) if n in parsers]
        previous = names
        yield flags, old, names


def test_the_vocabulary_table_matches_the_commands() -> None:
    parsers = cli_tables.commands()
    rows, wrong = 0, []
    for flags, old, names in _vocabulary_rows():
        rows += 1
        wrong += [f"kafka-spark {n} has no {f}" for n in names for f in flags
                  if f not in cli_tables.every_flag(parsers[n])]
        wrong += [f"no listed command takes {f}" for f in old
                  if not any(f in cli_tables.every_flag(parsers[n]) for n in names)]
    assert wrong == []
    assert rows >= 15


def test_the_readme_links_to_pages_that_exist() -> None:
    targets = re.findall(r"\]\((docs/[^)#\s]+)", (REPO / "README.md").read_text())
    assert len(targets) > 10
    assert [t for t in targets if not (REPO / t).is_file()] == []

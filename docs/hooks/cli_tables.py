"""The command-line reference as Markdown, read from the argument parsers the commands run with.

Every command, its usage line, its arguments and flags with their defaults and help come from
`kafka_spark.cli.main.build_parser()`, so the page cannot list a flag the command lacks or miss one it has.
Old spellings (hidden from `--help`) are listed after the flag they stand for.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from kafka_spark.cli.main import build_parser

WIDTH = 100  # usage lines wrap here, whatever the terminal


def commands() -> dict[str, argparse.ArgumentParser]:
    """Each sub-command's parser by name, in the order `kafka-spark --help` lists them."""
    return dict(_subcommands(build_parser()))


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _help(action: argparse.Action) -> str:
    return argparse.HelpFormatter("kafka-spark")._expand_help(action) if action.help else ""


def summaries() -> dict[str, str]:
    """Each sub-command's one-line help, as `kafka-spark --help` shows it."""
    out = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update({choice.dest: choice.help or "" for choice in action._choices_actions})
    return out


def usage(parser: argparse.ArgumentParser) -> str:
    """The usage line, wrapped at WIDTH."""
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def visible_flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments `--help` shows, positional ones first (without -h)."""
    shown = [a for a in parser._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]
    return sorted(shown, key=lambda a: bool(a.option_strings))


def hidden_spellings(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """dest -> the old spellings argparse still accepts for it."""
    out: dict[str, list[str]] = {}
    for action in parser._actions:
        if action.help == argparse.SUPPRESS and action.option_strings:
            out.setdefault(action.dest, []).extend(action.option_strings)
    return out


def every_flag(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string the parser accepts, hidden ones included."""
    return {s for a in parser._actions for s in a.option_strings}


def _escape(text: str) -> str:
    """Markdown table text: `|` escaped, `<` outside code spans kept from turning into HTML."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|").replace("<", "&lt;") for i, p in enumerate(parts))


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
    shown = action.metavar or choices or action.dest.upper()
    metavar = "" if action.nargs == 0 else f" {shown}"
    return ", ".join(f"`{s}{metavar}`" for s in action.option_strings)


def _default(action: argparse.Action) -> str:
    value = action.default
    if value is None or value is False or value == [] or value == argparse.SUPPRESS or action.nargs == 0:
        return ""
    return f"`{value}`"


def _sentence(text: str) -> str:
    return text if not text or text.endswith((".", ")")) else text + "."


def _choices(action: argparse.Action) -> str:
    return f" One of: {', '.join(f'`{c}`' for c in action.choices)}." if action.choices else ""


def command_section(name: str, parser: argparse.ArgumentParser, summary: str) -> str:
    """One command: its summary, usage, and a table of its arguments."""
    old = hidden_spellings(parser)
    lines = [f"## `kafka-spark {name}`", "", _escape(summary[:1].upper() + summary[1:]) + ".", ""]
    lines += ["```text", usage(parser), "```", ""]
    lines += [_escape(text) + "\n" for text in (parser.description, parser.epilog) if text]
    lines += ["| argument | default | meaning |", "|---|---|---|"]
    for action in visible_flags(parser):
        help_text = _sentence(_help(action)) + _choices(action)
        if action.dest in old and action.option_strings:
            help_text += f" (old spelling{'s' if len(old[action.dest]) > 1 else ''}, hidden: " + ", ".join(
                f"`{s}`" for s in old[action.dest]) + ")"
        lines.append(f"| {_names(action)} | {_default(action)} | {_escape(help_text)} |")
    return "\n".join(lines)


def reference() -> str:
    """Every command, in `--help` order."""
    helps = summaries()
    return "\n\n".join(command_section(name, parser, helps.get(name, "")) for name, parser in commands().items())


def command_list() -> str:
    """A table of the commands with their one-line help."""
    rows = ["| command | what it does |", "|---|---|"]
    rows += [f"| [`{name}`](#kafka-spark-{name}) | {_escape(text)} |" for name, text in summaries().items()]
    return "\n".join(rows)


GENERATED = {"cli-reference": reference, "cli-commands": command_list}

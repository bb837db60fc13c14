"""MkDocs hook: fills each `<!-- generated: NAME -->` line of a page with the reference generated from the code.

The generators live beside this file (option_tables.py, cli_tables.py, api_tables.py); a marker naming
none of them fails the build rather than leaving a hole in the page.
"""

from __future__ import annotations

import re
from typing import Any

import api_tables
import cli_tables
import option_tables

GENERATED = {**option_tables.GENERATED, **cli_tables.GENERATED, **api_tables.GENERATED}
MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.MULTILINE)


def fill(markdown: str) -> str:
    """`markdown` with every marker replaced by what it names."""
    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATED:
            raise KeyError(f"<!-- generated: {name} -->: no such generator; known: {', '.join(sorted(GENERATED))}")
        return GENERATED[name]()

    return MARKER.sub(generate, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fill(markdown)

"""notebooks/databricks/*.py are the .ipynb notebooks in Databricks' source format, cell for cell.

The files are parsed here as Databricks reads them (header line, `# COMMAND ----------` separators, `# MAGIC`
lines), independently of notebooks/export_databricks.py, which writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))
HEADER = "# Databricks notebook source"
SEPARATOR = "# COMMAND ----------"


def parse(source: str) -> list[tuple[str, str]]:
    """(kind, text) per cell: "code", or the magic command of a `# MAGIC` cell ("md", "pip", ...)."""
    lines = source.splitlines()
    assert lines[0] == HEADER
    cells: list[list[str]] = [[]]
    for line in lines[1:]:
        if line == SEPARATOR:
            cells.append([])
        else:
            cells[-1].append(line)
    parsed = []
    for cell in cells:
        text = "\n".join(cell).strip("\n")
        body = text.splitlines()
        if body and all(line == "# MAGIC" or line.startswith("# MAGIC ") for line in body):
            unmagic = [line[len("# MAGIC "):] for line in body]
            command, _, first = unmagic[0].partition(" ")
            assert command.startswith("%"), unmagic[0]
            parsed.append((command[1:], "\n".join([first, *unmagic[1:]]).strip("\n")))
        else:
            assert "# MAGIC" not in text, "a cell mixes MAGIC lines with code"
            parsed.append(("code", text))
    return parsed


def ipynb_cells(notebook: Path) -> list[tuple[str, str]]:
    kinds = {"code": "code", "markdown": "md"}
    return [(kinds[c["cell_type"]], "".join(c["source"]).strip("\n"))
            for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] in kinds]


def test_every_notebook_is_exported() -> None:
    exported = sorted(p.stem for p in (NOTEBOOKS / "databricks").glob("*.py"))
    assert exported == [n.stem for n in IPYNB]


@pytest.mark.parametrize("notebook", IPYNB, ids=[n.stem for n in IPYNB])
def test_export_matches_the_notebook(notebook: Path) -> None:
    cells = parse((NOTEBOOKS / "databricks" / f"{notebook.stem}.py").read_text())
    # A leading markdown cell says what to set on a cluster; then the notebook's cells, in order.
    assert cells[0][0] == "md" and "Databricks" in cells[0][1]
    assert cells[1:] == ipynb_cells(notebook)
    code = [text for kind, text in cells if kind == "code"]
    assert code == [text for kind, text in ipynb_cells(notebook) if kind == "code"]
    for text in code:
        compile(text, notebook.name, "exec")

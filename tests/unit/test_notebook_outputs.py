"""The notebooks are saved with the outputs of one clean run top to bottom (notebooks/execute.py), which is what
the docs site shows: every code cell ran, in order, none raised, and each notebook got as far as its own final
check. tests/integration/test_notebooks.py runs the same cells against a broker; this only reads the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# What each notebook prints once its own checks have passed (as tests/integration/test_notebooks.py expects).
DONE = {"quickstart": "up-to-date", "streaming": "rows in the table = records produced",
        "cdc": "current state = source table"}
RERUN = "run `.venv/bin/python notebooks/execute.py` and commit the notebooks"


def code_cells(notebook: Path) -> list[dict]:
    return [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]


def text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif "data" in out and "text/plain" in out["data"]:
            parts.append("".join(out["data"]["text/plain"]))
    return "".join(parts)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_saved_with_the_outputs_of_one_clean_run(notebook: Path) -> None:
    cells = code_cells(notebook)
    assert [c.get("execution_count") for c in cells] == list(range(1, len(cells) + 1)), RERUN
    errors = [out.get("ename") for c in cells for out in c.get("outputs", []) if out["output_type"] == "error"]
    assert errors == [], RERUN
    assert DONE[notebook.stem] in "".join(text(c) for c in cells), RERUN


def test_the_streaming_notebook_shows_its_plot() -> None:
    cells = code_cells(next(n for n in NOTEBOOKS if n.stem == "streaming"))
    assert any("image/png" in out.get("data", {}) for c in cells for out in c.get("outputs", [])), RERUN

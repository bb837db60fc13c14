"""Writes each notebooks/*.ipynb to notebooks/databricks/<name>.py in Databricks' source format.

Code cells are copied as they are; markdown cells become `# MAGIC` lines. A leading markdown cell says what
to set on a cluster. Run from anywhere: `python notebooks/export_databricks.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "databricks"
HEADER = "# Databricks notebook source"
SEPARATOR = "\n\n# COMMAND ----------\n\n"
PREAMBLE = """%md
**On Databricks** (exported from `notebooks/{name}.ipynb`; see `docs/databricks.md`): install kafka-spark as a
cluster library and set `KAFKA_BOOTSTRAP` to your brokers (a cluster environment variable, or
`os.environ["KAFKA_BOOTSTRAP"] = ...` in a cell above); cells that would start a local broker need it.
`local_spark()` returns the cluster's own session there. The tables go to a temporary directory on the driver:
use a single-node cluster, or set `table` to a path on a Unity Catalog volume (`/Volumes/...`)."""


def magic(text: str) -> str:
    """`text` as `# MAGIC` lines."""
    return "\n".join(f"# MAGIC {line}".rstrip() for line in text.splitlines())


def export(notebook: Path) -> str:
    """The Databricks source of one .ipynb notebook."""
    cells = [magic(PREAMBLE.format(name=notebook.stem))]
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"]).strip("\n")
        if cell["cell_type"] == "code":
            cells.append(source)
        elif cell["cell_type"] == "markdown":
            cells.append(magic("%md\n" + source))
    return HEADER + "\n" + SEPARATOR.join(cells) + "\n"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for notebook in sorted(HERE.glob("*.ipynb")):
        target = OUT / f"{notebook.stem}.py"
        target.write_text(export(notebook))
        print(target.relative_to(HERE.parent))


if __name__ == "__main__":
    main()

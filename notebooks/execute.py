"""Runs each notebook top to bottom against the local broker and saves it with its outputs, as the docs site shows it.

    .venv/bin/python notebooks/execute.py                        # every notebooks/*.ipynb
    .venv/bin/python notebooks/execute.py notebooks/streaming.ipynb

The broker is the one `kafka-spark local start` runs: started here unless it is running, and stopped again
afterwards only if it was started here. Each notebook runs in the `.venv` kernel in a scratch directory (what
it writes goes to temporary directories anyway) and stops at the first cell that raises, leaving the saved
notebook as it was. The suite runs the same cells (tests/integration/test_notebooks.py) but writes nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from kafka_spark.local import broker_daemon

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT = 600  # seconds: the streaming notebook watches its stream for about a minute


def execute(path: Path) -> float:
    """Run one notebook and save it with its outputs; the seconds it took."""
    notebook = nbformat.read(path, as_version=4)
    # Cell ids as nbformat 4.5 wants them (the notebooks predate them), kept once given, so reruns change
    # only outputs.
    notebook.nbformat_minor = max(notebook.nbformat_minor, 5)
    for number, cell in enumerate(notebook.cells):
        cell.setdefault("id", f"{path.stem}-{number}")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{path.stem}-") as scratch:
        # record_timing off: the saved file changes only where the outputs do.
        NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": scratch}}).execute()
    nbformat.write(notebook, path)
    return time.monotonic() - began


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run notebooks against the local broker and save their outputs.")
    parser.add_argument("notebooks", nargs="*", type=Path, help="the notebooks to run (default: notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(HERE.glob("*.ipynb"))
    broker, started = broker_daemon.start()
    print(f"local broker at {broker.bootstrap}{' (started)' if started else ''}", file=sys.stderr)
    try:
        for path in paths:
            print(f"{path.relative_to(HERE.parent)}: {execute(path):.0f} s", file=sys.stderr)
    finally:
        if started:
            broker_daemon.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every notebook's code cells run top to bottom against a real broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
# What each notebook prints once its own checks have passed.
DONE = {"quickstart": "up-to-date", "streaming": "rows in the table = records produced",
        "cdc": "current state = source table"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_runs(notebook: Path, kafka, tmp_path, topic_name):
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    script = tmp_path / f"{notebook.stem}.py"
    script.write_text(code)
    env = {**os.environ, "KAFKA_BOOTSTRAP": kafka.bootstrap, "QUICKSTART_TOPIC": topic_name}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600,
                         check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    assert DONE[notebook.stem] in out.stdout, out.stdout[-4000:]


def test_every_notebook_is_checked():
    assert sorted(n.stem for n in NOTEBOOKS) == sorted(DONE)

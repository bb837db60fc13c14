"""`.ci/setup` (which spark-submit.sh runs before every job) returns at once when it has set this checkout up
before and everything it made is still there; a missing jar folder or class archive makes it run in full again."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READY = REPO / ".venv" / ".kafka-spark-ready"


def _setup() -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / ".ci" / "setup")], cwd=REPO, capture_output=True, text=True,
                          timeout=900, check=False)


def test_a_set_up_checkout_is_ready_at_once_and_a_missing_part_runs_the_set_up_again(tmp_path: Path) -> None:
    first = _setup()
    assert first.returncode == 0, first.stderr[-3000:]
    lines = READY.read_text().splitlines()
    made = lines[1:]
    # the jar folders and class archives of the set-up, each one there
    assert any(p.endswith(".jsa") for p in made) and any("/jars/" in p for p in made)
    assert all(Path(p).exists() for p in made)

    again = _setup()
    assert again.returncode == 0 and again.stderr == "" and again.stdout == ""

    gone = tmp_path / "deleted-archive.jsa"
    READY.write_text("\n".join([*lines, str(gone)]) + "\n")
    full = _setup()
    assert full.returncode == 0, full.stderr[-3000:]
    assert "class archive: " in full.stderr  # the full set-up ran and said what it made
    assert READY.read_text().splitlines() == lines

    READY.write_text("\n".join(["another-key", *made]) + "\n")
    assert "class archive: " in _setup().stderr
    assert READY.read_text().splitlines() == lines

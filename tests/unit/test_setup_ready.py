"""`.ci/setup` (which spark-submit.sh runs before every job) returns at once when it has set this checkout up
before and everything it made is still there; a missing jar folder or class archive makes it run in full again.
A set-up for another cache folder (a test's private cache, whose jar folders link to this one's) keeps a stamp of
its own, leaves this one's in place, and shares the class archives rather than writing its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.cache import private_cache

REPO = Path(__file__).resolve().parents[2]


def _setup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / ".ci" / "setup"), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=900, check=False, env=env)


def _ready_file(env: dict[str, str] | None = None) -> Path:
    return Path(_setup("--ready-file", env=env).stdout.strip())


def _archives(stamp: Path) -> list[Path]:
    """The class archives a set-up's stamp lists."""
    return [Path(p) for p in stamp.read_text().splitlines() if p.endswith(".jsa")]


def test_a_set_up_checkout_is_ready_at_once_and_a_missing_part_runs_the_set_up_again(tmp_path: Path) -> None:
    first = _setup()
    assert first.returncode == 0, first.stderr[-3000:]
    ready = _ready_file()
    made = ready.read_text().splitlines()
    # the jar folders and class archives of the set-up, each one there
    assert any(p.endswith(".jsa") for p in made) and any("/jars/" in p for p in made)
    assert all(Path(p).exists() for p in made)

    again = _setup()
    assert again.returncode == 0 and again.stderr == "" and again.stdout == ""

    gone = tmp_path / "deleted-archive.jsa"
    ready.write_text("\n".join([*made, str(gone)]) + "\n")
    full = _setup()
    assert full.returncode == 0, full.stderr[-3000:]
    assert "class archive: " in full.stderr  # the full set-up ran and said what it made
    assert ready.read_text().splitlines() == made


def test_another_cache_has_its_own_stamp_and_shares_the_class_archives(tmp_path: Path) -> None:
    assert _setup().returncode == 0
    ready = _ready_file()
    archives = sorted(a.name for a in _archives(ready))
    folder = _archives(ready)[0].parent
    before = set(os.listdir(folder))

    env = private_cache(tmp_path)
    theirs = _ready_file(env)
    assert theirs != ready
    private = _setup(env=env)
    assert private.returncode == 0, private.stderr[-3000:]
    # the same archives, reached through the private cache's link: none written for it
    assert sorted(a.name for a in _archives(theirs)) == archives
    assert set(os.listdir(folder)) == before
    # both stamps stand: each set-up is ready at once
    assert _setup().stderr == "" and _setup(env=env).stderr == ""

    # a stamp whose folders are gone goes with the next full set-up
    stale = ready.with_name(".kafka-spark-ready-stale")
    stale.write_text(f"{tmp_path / 'gone'}\n")
    ready.write_text(ready.read_text() + f"{tmp_path / 'missing.jsa'}\n")
    assert "class archive: " in _setup().stderr
    assert not stale.exists() and theirs.exists()

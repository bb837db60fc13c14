"""The fuzz campaign in the suite: every saved crash input replays cleanly, and a short run of every
target (a few seconds each) finds nothing. The long campaign is tests/fuzz/run_fuzz.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
if str(_FUZZ) not in sys.path:
    sys.path.insert(0, str(_FUZZ))

from engine import CORPUS, fuzz, run_one  # noqa: E402
from targets import ALLOWED, TARGETS  # noqa: E402

SAVED = sorted(p for p in CORPUS.glob("*/*.bin"))


@pytest.mark.parametrize("path", SAVED, ids=[f"{p.parent.name}/{p.name}" for p in SAVED])
def test_corpus_input_replays_cleanly(path: Path) -> None:
    target = TARGETS[path.parent.name]
    exc = run_one(target, path.read_bytes(), per_input_s=10.0)
    assert exc is None or isinstance(exc, ALLOWED), f"{type(exc).__name__}: {exc}"


def test_corpus_folders_name_targets() -> None:
    assert {p.name for p in CORPUS.iterdir() if p.is_dir()} <= set(TARGETS)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_smoke(name: str) -> None:
    report = fuzz(TARGETS[name], max_inputs=3000, max_seconds=3.0, seed=20261123, per_input_s=5.0)
    assert report.inputs > 0
    assert not report.findings, "\n".join(f"{f.key}: {f.text}" for f in report.findings.values())

"""The package type-checks clean with mypy, configured by `[tool.mypy]` in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_is_clean(tmp_path: Path) -> None:
    # A fresh cache: a stale one from another checkout or mypy version could hide an error.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy_cache"), "--no-error-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    report = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, f"mypy found type errors:\n{report}"

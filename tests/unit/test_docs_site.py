"""The documentation site builds with every warning an error: a broken link or anchor, a page left out of the
navigation, a missing API name or a generator marker that names nothing fails here, as in `mkdocs build
--strict`. A few seconds: the notebooks are rendered from their saved outputs, not run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # NO_MKDOCS_2_WARNING: Material's notice about its successor, printed on every build, is no warning of ours.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-6000:]
    assert "WARNING" not in log, log[-6000:]
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    for page in ("index.html", "reference/options/index.html", "reference/cli/index.html", "reference/api/index.html",
                 "notebooks/quickstart/index.html", "notebooks/streaming/index.html"):
        assert page in pages, pages
    options = (site / "reference" / "options" / "index.html").read_text()
    assert "maxOffsetsPerTrigger" in options and "<!-- generated" not in options

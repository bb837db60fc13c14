"""Make the helper modules next to these tests importable (pytest runs with --import-mode=importlib)."""

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# the shared checks are plain asserts; rewrite them so a failure shows the values involved
pytest.register_assert_rewrite("proof_checks")

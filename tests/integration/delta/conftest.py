"""Makes `delta_support` importable under any import mode (the producer fixture: tests/integration/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


"""Shared by the segment-file proofs: the dump comparison helpers (the Java producer: ../conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
# ProduceRecords.java and its runner live with the record-format proofs; one producer serves both.
for helper_dir in (_HERE, _HERE.parent / "records"):
    if str(helper_dir) not in sys.path:
        sys.path.insert(0, str(helper_dir))

pytest.register_assert_rewrite("dump_compare")


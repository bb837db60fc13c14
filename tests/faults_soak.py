"""The long fault schedule: the fault tests with 10x the data and 10x the faults, over several seeds.

    .venv/bin/python tests/faults_soak.py                 # seeds 1..5, every test in tests/integration/faults
    .venv/bin/python tests/faults_soak.py --seeds 20 -k range_read

Each round runs `pytest tests/integration/faults` with FAULTS_SOAK=1 (20,000 records per partition,
a budget of 30 faults per test instead of 3; the Delta load and stream each under every plan, the broker
faults with 10x the seeded records) and FAULTS_SEED=<n> (another random fault sequence for the random-mix
plans), and stops at the first failing round. The quick variant of the same tests
runs in the suite. The fuzz campaign is separate: tests/fuzz/run_fuzz.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="rounds, with FAULTS_SEED=1..N")
    parser.add_argument("-k", default=None, help="pytest -k expression to select tests")
    args = parser.parse_args(argv)
    for seed in range(1, args.seeds + 1):
        env = {**os.environ, "FAULTS_SOAK": "1", "FAULTS_SEED": str(seed)}
        cmd = [sys.executable, "-m", "pytest", "tests/integration/faults", "-q", "-s", "-p", "no:cacheprovider"]
        if args.k:
            cmd += ["-k", args.k]
        started = time.monotonic()
        code = subprocess.call(cmd, cwd=ROOT, env=env)
        print(f"soak round seed={seed}: exit {code} in {time.monotonic() - started:.0f}s", flush=True)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())

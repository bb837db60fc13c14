"""Fuzz campaign for every decoder, run outside the test suite.

    .venv/bin/python tests/fuzz/run_fuzz.py                       # every target, 200k inputs or 180 s each
    .venv/bin/python tests/fuzz/run_fuzz.py --targets records,segment --max-inputs 1000000 --max-seconds 3600
    .venv/bin/python tests/fuzz/run_fuzz.py --seed 7 --no-save    # another random stream, keep nothing

Targets (see targets.py): protocol (every response API at every declared version, plus the consumer
protocol payloads), records (v0/v1 message sets and v2 batches with each codec, per-record and
vectorised decoders cross-checked), segment (.log with its .index/.timeindex/.txnindex through
`read_segment` and the seeks), index, checkpoint, snapshot, registry-http (the schema registry's
answers through a local HTTP server: size, shape, ids), json-schema-depth (JSON Schema values nested
900-1100 deep), avro-block (fetched batches of Avro values through `decode_batch` with the column-wise
block path on and off: the same batch or the same typed error). Only KafkaSparkError may escape; each
input is bounded in time (--per-input-seconds) and the process in memory (--memory-mb above its size at
start). New findings are saved to tests/fuzz/corpus/<target>/ and replayed by tests/unit/test_fuzz_corpus.py.
Exit status 1 if anything was found.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import fuzz, limit_memory
from targets import TARGETS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated: " + ", ".join(TARGETS))
    parser.add_argument("--max-inputs", type=int, default=200_000)
    parser.add_argument("--max-seconds", type=float, default=180.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-input-seconds", type=float, default=5.0)
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--no-save", action="store_true", help="do not write findings to the corpus")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {unknown}; choose from {sorted(TARGETS)}")
    logging.disable(logging.CRITICAL)  # skip_corrupt warnings would flood the report
    limit_memory(args.memory_mb << 20)
    found = 0
    for name in names:
        report = fuzz(TARGETS[name], max_inputs=args.max_inputs, max_seconds=args.max_seconds, seed=args.seed,
                      per_input_s=args.per_input_seconds, save=not args.no_save)
        print(report.line(), flush=True)
        for finding in report.findings.values():
            print(f"  FINDING {finding.key} x{finding.count}\n    " + finding.text.replace("\n", "\n    "))
        for path in report.saved:
            print(f"  saved {path}")
        found += len(report.findings)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

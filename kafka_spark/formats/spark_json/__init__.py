"""Spark's `from_json` (PERMISSIVE) emulated where its result is certain, for the direct writer's `value_schema`:
Python's scanner with Spark's checks (parser.py) and msgspec's typed fast path (typed.py)."""

"""Which modules of the wheel the product uses: those reached, import by import, from what Spark and users run
(the console script, `python -m` entry points, the public API, the `pyspark_*` data source modules) and from what
the repository gives users outside the tests (jobs, notebooks, scripts, the documentation and its build hooks).

A module reached from none of them is used by the tests alone, or by nobody: it does not belong in the wheel.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

# Files of the repository that users run or read, outside the tests; a module they name is used.
USER_FILES = ("README.md", "spark-submit.sh", ".ci/setup", "jobs/*.py", "notebooks/**/*.ipynb", "notebooks/**/*.py",
              "docs/**/*.md", "docs/hooks/*.py")
# What runs without being imported: `python -m kafka_spark`, `python -m kafka_spark.cli`, the public API, and the
# modules Spark imports itself when a session starts.
ENTRY_MODULES = ("kafka_spark", "kafka_spark.__main__", "kafka_spark.cli.__main__", "pyspark_kafka_spark",
                 "pyspark_kafka_spark_log")

_DOTTED = re.compile(r"\bkafka_spark(?:\.\w+)+|\bpyspark_kafka_spark\w*")
_PATH = re.compile(r"\bkafka_spark(?:/\w+)+(?:\.py)?")


def module_name(path: str) -> str:
    """`kafka_spark/local/spark.py` -> `kafka_spark.local.spark`; a package's `__init__.py` -> the package."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _with_parents(names: Iterable[str], known: set[str]) -> set[str]:
    """The known modules among `names` and their parent packages (importing `a.b.c` runs `a` and `a.b` too); a name
    that is no module (`pkg.module.attribute`) stands for its longest known prefix."""
    found = set()
    for name in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in known:
                found.add(prefix)
    return found


def imported(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The known modules that `module` (its text: `source`) imports, or names as a string to import."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from pkg import module` imports the module; `from module import name` only the module
            names |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names |= set(_DOTTED.findall(node.value))
    return _with_parents(names, known)


def named_in(text: str, known: set[str]) -> set[str]:
    """The known modules a text names: dotted (`kafka_spark.local.spark`) or as a path (`kafka_spark/local/x.py`)."""
    names = set(_DOTTED.findall(text)) | {module_name(p) for p in _PATH.findall(text)}
    return _with_parents(names, known)


def user_files(repo: Path) -> list[Path]:
    return sorted({path for pattern in USER_FILES for path in repo.glob(pattern) if path.is_file()})


def unused(sources: Mapping[str, str], repo: Path, entry_modules: Iterable[str] = ()) -> set[str]:
    """The modules of `sources` (wheel path -> text) that neither an entry point nor a user file reaches."""
    modules = {module_name(path): (path, text) for path, text in sources.items()}
    known = set(modules)
    todo = list(_with_parents([*ENTRY_MODULES, *entry_modules], known))
    for path in user_files(repo):
        todo += named_in(path.read_text(errors="replace"), known)
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path, text = modules[module]
        todo += imported(text, module, path.endswith("/__init__.py"), known)
    return known - seen

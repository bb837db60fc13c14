"""The package's folders depend downwards only: a folder imports folders of its own layer or below it,
and no folders import each other in a cycle.

Every import counts: at module level, inside functions, under TYPE_CHECKING, relative ones, and the
module names the package spells as strings for lazy imports (`lazy_exports` maps, `import_module`).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import kafka_spark

PACKAGE = Path(kafka_spark.__file__).parent

# The layers, bottom first. A folder may import its own layer and those below; folders of one layer
# may import each other, never in a cycle. `local` (the local servers and sessions behind
# `kafka-spark local` and the notebooks) sits above the product's layers it starts and below the
# commands that use it, so nothing it drives ever imports it.
LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("protocol",),
    ("records",),
    ("formats",),
    ("client", "zookeeper", "segments"),
    ("offsets",),
    ("spark",),
    ("sink",),
    ("delta", "iceberg"),
    ("local",),
    ("app",),
    ("cli",),
]
RANK = {folder: level for level, folders in enumerate(LAYERS) for folder in folders}
# The package's root modules: `kafka_spark/__init__.py` (the public API, which names any folder's
# modules as strings and imports them on first use) and helpers every folder may use.
ROOT = "<root>"

_MODULE_NAME = re.compile(r"kafka_spark(\.\w+)+")

Edge = tuple[str, str]  # (importing folder, imported folder)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    """The folder a module belongs to (ROOT for the package's own modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ROOT


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every kafka_spark module that `module` (its text: `source`) imports, or names
    as a string to import."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    # A logger's name spells a module but imports nothing (the producer's modules share one logger).
    logger_names = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "getLogger" for arg in node.args}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            # `from kafka_spark import delta` imports a folder, not a name of the root module.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names
                      if base == "kafka_spark" and (PACKAGE / alias.name).is_dir()]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_NAME.fullmatch(node.value)
              and id(node) not in logger_names):
            found.append((node.lineno, node.value))
    return [(line, name) for line, name in found if name == "kafka_spark" or name.startswith("kafka_spark.")]


def folder_imports() -> dict[Edge, list[str]]:
    """Every import from one folder (or the root modules) into another, with where it is."""
    edges: dict[Edge, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        source = _unit(module)
        for line, name in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            target = _unit(name)
            if target != source:
                edges[(source, target)].append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return edges


def cycles(edges: set[Edge]) -> list[list[str]]:
    """Each group of folders that reach each other (Tarjan's strongly connected components)."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def package_sources() -> dict[str, tuple[str, bool]]:
    """Every module of the package: name -> (source, whether it is a package's __init__)."""
    return {_module_name(path): (path.read_text(), path.name == "__init__.py")
            for path in sorted(PACKAGE.rglob("*.py"))}


def module_imports(sources: dict[str, tuple[str, bool]]) -> dict[Edge, list[str]]:
    """Every import of a module by another module of the same folder (not its subfolders), with the line."""
    edges: dict[Edge, list[str]] = defaultdict(list)
    for module, (source, is_package) in sources.items():
        folder = module if is_package else module.rsplit(".", 1)[0]
        named = imported_modules(source, module, is_package) + [
            (node.lineno, f"{node.module}.{alias.name}") for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names]  # `from pkg import module`
        for line, name in named:
            if name in sources and name != module and name.rsplit(".", 1)[0] == folder and not sources[name][1]:
                edges[(module, name)].append(f"{module}:{line} imports {name}")
    return edges


def private_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """`from module import _name` of another module: a private name shared is a public one misnamed."""
    found = []
    for module, (source, _) in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kafka_spark"):
                found += [f"{module}:{node.lineno} imports {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_cycle_between_modules_of_a_folder() -> None:
    edges = module_imports(package_sources())
    found = cycles(set(edges))
    detail = ["; ".join(where for (a, b), places in sorted(edges.items()) if a in group and b in group
                        for where in places) for group in found]
    assert found == [], "modules of one folder that import each other:\n" + "\n".join(detail)


def test_no_private_name_imported_from_another_module() -> None:
    assert private_imports(package_sources()) == []


def test_the_module_checks_see_a_cycle_and_a_private_name() -> None:
    sources = {
        "kafka_spark.demo": ("", True),
        "kafka_spark.demo.a": ("from kafka_spark.demo.b import thing\n", False),
        "kafka_spark.demo.b": ("def f():\n    from kafka_spark.demo import c\n", False),
        "kafka_spark.demo.c": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from kafka_spark.demo.a import _hidden\n", False),
        "kafka_spark.demo.d": ("import logging\nlog = logging.getLogger('kafka_spark.demo.a')\n", False),
        "kafka_spark.demo.sub.e": ("from kafka_spark.demo.a import thing\n", False),
    }
    edges = module_imports(sources)
    assert cycles(set(edges)) == [["kafka_spark.demo.a", "kafka_spark.demo.b", "kafka_spark.demo.c"]]
    assert ("kafka_spark.demo.d", "kafka_spark.demo.a") not in edges  # a logger's name is not an import
    assert private_imports(sources) == ["kafka_spark.demo.c:3 imports kafka_spark.demo.a._hidden"]


def test_every_folder_has_a_layer() -> None:
    folders = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders - set(RANK) == set(), "place the new folder in LAYERS"


def test_no_folder_imports_a_layer_above_it() -> None:
    upward = [where for (source, target), places in sorted(folder_imports().items())
              if source != ROOT and target != ROOT and RANK[target] > RANK[source] for where in places]
    assert upward == [], "imports of a higher layer:\n" + "\n".join(upward)


def test_no_cycle_between_folders() -> None:
    edges = folder_imports()
    found = cycles({edge for edge in edges if ROOT not in edge})
    detail = [f"{' <-> '.join(group)}: " + "; ".join(
        where for (a, b), places in sorted(edges.items()) if a in group and b in group for where in places)
        for group in found]
    assert found == [], "folders that import each other:\n" + "\n".join(detail)


def test_root_modules_import_no_folder_at_import_time() -> None:
    # The root modules are what `import kafka_spark.anything` runs first: they stay free of the layers
    # (the public API names its modules as strings and imports each on first use). `__main__.py` is only
    # ever run, as `python -m kafka_spark`, never imported.
    eager = []
    for path in PACKAGE.glob("*.py"):
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kafka_spark."):
                if _unit(node.module) != ROOT:
                    eager.append(f"{path.name}:{node.lineno} imports {node.module}")
            elif isinstance(node, ast.Import):
                eager += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names
                          if a.name.startswith("kafka_spark.") and _unit(a.name) != ROOT]
    assert eager == []


def test_the_checks_see_every_kind_of_import() -> None:
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
from . import options
from ..delta import sink
if TYPE_CHECKING:
    from kafka_spark.app import runner
def later():
    import kafka_spark.cli.main
    from kafka_spark import local
EXPORTS = {"Thing": "kafka_spark.formats.avro.codec"}
"""
    names = {name for _, name in imported_modules(source, "kafka_spark.spark.planner")}
    assert names == {"kafka_spark.spark", "kafka_spark.delta", "kafka_spark.app", "kafka_spark.cli.main", "kafka_spark",
                     "kafka_spark.local", "kafka_spark.formats.avro.codec"}
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]

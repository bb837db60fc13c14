"""Virtual environments with another PySpark than the repository's, built once and cached under the kafka-spark
cache directory with PySpark's wheel, keyed on the package's dependencies and pins alone.

The compat tests install the freshly built wheel into them; other tests run a script of their own there (Iceberg's
Spark runtime reads the Iceberg sink's tables under PySpark 4.1, and writes them as the sink's Spark writer, the
package imported from the repository: that environment has the `iceberg` extra's dependencies too). Every call
removes kafka-spark from the environment again, so two tests must never use one at the same time: tests reach them
through the `pyspark_envs` fixture, which puts them in one scheduling group (tests/scheduling.py).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

from wheel_build import REPO, run

from kafka_spark.local.jars import cache_dir


def constraints_without_spark(path: Path) -> Path:
    """The repository's constraints minus PySpark and Delta, whose versions the target environment chooses."""
    keep = [line for line in (REPO / "constraints.txt").read_text().splitlines()
            if not re.match(r"(?i)^(pyspark|delta[-_]spark)==", line)]
    path.write_text("\n".join(keep) + "\n")
    return path


def pyspark_wheel(version: str) -> Path:
    """PySpark's wheel, built from its sdist once and kept in the cache."""
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(f"pyspark-{version}-*.whl"))
    if not found:
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), f"pyspark=={version}"])
        found = sorted(wheels.glob(f"pyspark-{version}-*.whl"))
    return found[0]


def env_dir(version: str, extras: tuple[str, ...] = ()) -> Path:
    """Where the environment of PySpark `version` with the package's dependencies and `extras`' is cached."""
    # Keyed on what the environment holds, so that edits elsewhere in pyproject.toml keep it.
    deps = "\n".join(dependencies(extras)).encode() + (REPO / "constraints.txt").read_bytes()
    key = hashlib.sha256(deps + sys.version.encode()).hexdigest()[:12]
    return cache_dir() / "envs" / f"pyspark-{version}-{key}"


def spark_env(version: str, tmp_path: Path, extras: tuple[str, ...] = ()) -> Path:
    """A cached virtual environment with PySpark `version` and the package's dependencies (and those of its
    `extras`), without the package."""
    venv = env_dir(version, extras)
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(venv)])
        constraints = constraints_without_spark(tmp_path / "constraints.txt")
        run([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), str(pyspark_wheel(version))])
        # The dependencies at the tested versions, so that a run needs no downloads; the package comes per run.
        run([str(python), "-m", "pip", "install", "-q", "-c", str(constraints), *dependencies(extras)])
        (venv / ".complete").write_text(version)
    run([str(python), "-m", "pip", "uninstall", "-y", "-q", "kafka-spark"])
    return python


def dependencies(extras: tuple[str, ...] = ()) -> list[str]:
    """The package's declared dependencies (pyproject.toml's `project.dependencies`) and those of `extras`."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    return [*project["dependencies"], *(d for extra in extras for d in project["optional-dependencies"][extra])]

"""Writing Java `.properties` files and locating the packaged logging templates."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path


def write_properties(path: Path, props: Mapping[str, object]) -> Path:
    """Write `props` as a Java properties file (values used verbatim) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def template(name: str, into: Path) -> Path:
    """Copy a packaged template file into `into` (a directory) and return the copy's absolute path."""
    into.mkdir(parents=True, exist_ok=True)
    dest = into / name
    text = (resources.files("kafka_spark.local") / "templates" / name).read_text()
    if not dest.is_file() or dest.read_text() != text:
        # Replaced whole: a JVM that another process starts at this moment must never read half a file.
        partial = dest.with_name(f"{name}.{os.getpid()}.partial")
        partial.write_text(text)
        partial.replace(dest)
    return dest.resolve()

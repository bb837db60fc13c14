"""Functions users name as ``module:function`` (token hooks, load transforms), imported with a clear error."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from kafka_spark.errors import ConfigError


def import_callable(path: str, label: str, malformed: str) -> Callable[..., Any]:
    """The callable `path` names; `ConfigError` with `malformed` for a path not written ``module:function``,
    else one starting with `label` saying what is wrong."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ConfigError(malformed)
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if not callable(target):
        raise ConfigError(f"{label} is not callable")
    return target

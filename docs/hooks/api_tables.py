"""The Python API page: one mkdocstrings block per name `kafka_spark` exports, grouped by the layer it comes from.

The list is `kafka_spark`'s own export map (pinned by tests/unit/test_public_api.py), so a name added to or
removed from the public API is added to or removed from the page with it.
"""

from __future__ import annotations

import importlib

import kafka_spark

TITLES = {"errors": "Errors", "client": "Kafka client", "records": "Records", "offsets": "Offsets",
          "protocol": "Offsets", "spark": "Spark data sources", "sink": "The sink (any table format)",
          "delta": "Delta Lake"}


def where(name: str) -> str:
    """The dotted path of the class or function an exported name is defined as."""
    value = getattr(importlib.import_module(kafka_spark._EXPORTS[name]), name)
    return f"{value.__module__}.{name}"


def reference() -> str:
    """Markdown with a `:::` block for each export, under a heading per layer, in the export map's order."""
    sections: dict[str, list[str]] = {}
    for name in kafka_spark._EXPORTS:
        layer = kafka_spark._EXPORTS[name].split(".")[1]
        sections.setdefault(TITLES[layer], []).append(f"::: {where(name)}")
    return "\n\n".join(f"## {title}\n\n" + "\n\n".join(blocks) for title, blocks in sections.items())


GENERATED = {"python-api": reference}

"""The Grafana dashboard in the docs (docs/assets/grafana/kafka-spark-dashboard.json) against the metrics the
stream really exports: a renamed metric or label, a variable dropped or a panel pasted over another fails here
rather than as an empty panel on somebody's screen.

The expressions are read with a small tokenizer, not a full PromQL parser: enough to find every metric name,
label name, function and variable they use (the screenshot script, bench/dashboard_screenshot.py, runs them all
against a real Prometheus)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kafka_spark.app.metrics import StreamMetrics
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.sink import LoadResult, MultiLoadResult
from kafka_spark.sink.freshness import Freshness
from kafka_spark.sink.results import Compaction

DASHBOARD = Path(__file__).resolve().parents[3] / "docs/assets/grafana/kafka-spark-dashboard.json"
# Variables Grafana itself defines for every dashboard.
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms",
                     "__from", "__to", "__dashboard", "__org", "__user"}
FUNCTIONS = {"rate", "irate", "increase", "delta", "deriv", "histogram_quantile", "time", "vector", "scalar",
             "label_replace", "clamp_min", "clamp_max", "abs", "absent", "changes", "resets", "timestamp",
             "max_over_time", "min_over_time", "avg_over_time", "sort", "sort_desc"}
AGGREGATIONS = {"sum", "max", "min", "avg", "count", "topk", "bottomk", "quantile", "stddev", "group"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset"}
IDENT = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
SELECTOR = re.compile(rf"({IDENT})?\s*\{{([^}}]*)\}}")
MATCHER = re.compile(r'\s*(\w+)\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*,?')
GROUP_CLAUSE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")


def exported() -> dict[str, tuple[str, set[str]]]:
    """Each sample name StreamMetrics exports -> (its family's type, its label names), with every metric set
    once: a committed result carrying freshness, retries and dead letters, a failed table, compactions (one that
    ran, one that failed), a lag."""
    metrics = StreamMetrics("s", "/lake/t")
    tp = TopicPartition("orders", 0)
    fresh = Freshness(p50_ms=300, p99_ms=900, max_ms=1200, committed_at_ms=1_700_000_000_000)
    metrics.record(0, LoadResult("committed", "s", 0, rows=10, seconds=0.4, offsets={tp: 10}, freshness=fresh,
                                 bytes=4096, retries=1, dead_letters=2))
    metrics.record(1, MultiLoadResult([LoadResult("failed", "s", None, table="t_b", topic="b", error="boom")]))
    metrics.record(2, LoadResult("committed", "s", 2, rows=1, compaction=Compaction(files_after=2, removed=9, added=1)))
    metrics.record(3, LoadResult("committed", "s", 3, rows=1, compaction=Compaction(error="conflict")))
    metrics.set_lag({"": 3})
    found: dict[str, tuple[str, set[str]]] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            found.setdefault(sample.name, (family.type, set()))[1].update(sample.labels)
    return found


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


@pytest.fixture(scope="module")
def series() -> dict[str, tuple[str, set[str]]]:
    return exported()


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return [p for p in found if p.get("type") != "row"]


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield panel, target


def variables_used(text: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in VARIABLE.finditer(text)}


class Parsed:
    """What one PromQL expression names: metrics with the labels their selectors match on, labels of grouping
    clauses, functions and aggregations."""

    def __init__(self, expr: str) -> None:
        named: set[tuple[str, tuple[str, ...]]] = set()
        self.grouping: set[str] = set()
        self.calls: set[str] = set()
        text = VARIABLE.sub("VAR", expr)
        for match in SELECTOR.finditer(text):
            body = match.group(2)
            assert MATCHER.sub("", body).strip() == "", f"label matchers not understood in {expr!r}: {body}"
            named.add((match.group(1) or "", tuple(name for name, _ in MATCHER.findall(body))))
        text = SELECTOR.sub(" ", text)  # each selector, its metric name with it, is counted above
        for match in GROUP_CLAUSE.finditer(text):
            self.grouping.update(n.strip() for n in match.group(2).split(",") if n.strip())
        text = GROUP_CLAUSE.sub(" ", text)
        text = re.sub(r"\[[^\]]*\]", " ", text)  # range durations
        text = re.sub(r"\b\d+(\.\d+)?([eE][+-]?\d+)?\b", " ", text)  # numbers
        for match in re.finditer(rf"({IDENT})(\s*\()?", text):
            name, call = match.group(1), match.group(2)
            if call:
                self.calls.add(name)
            elif name not in KEYWORDS and name != "VAR":
                named.add((name, ()))
        # a selector without a metric name would match every series: none is expected, and it fails the tests
        self.metrics = sorted(named)


def test_is_an_importable_dashboard(dashboard: dict[str, Any]) -> None:
    assert dashboard["schemaVersion"] >= 39
    assert dashboard["title"] and dashboard["uid"]
    assert dashboard.get("id") is None  # an instance's own id would clash on import
    names = [v["name"] for v in dashboard["templating"]["list"]]
    assert len(names) == len(set(names))
    datasource = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
    assert (datasource["type"], datasource["query"]) == ("datasource", "prometheus")
    for panel in panels(dashboard):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


def test_every_panel_has_a_query_and_a_unique_id(dashboard: dict[str, Any]) -> None:
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), ids
    for panel in panels(dashboard):
        targets = panel.get("targets", [])
        assert targets and all(t.get("expr", "").strip() for t in targets), panel["title"]
        refs = [t["refId"] for t in targets]
        assert len(refs) == len(set(refs)), panel["title"]


def test_panels_fit_the_grid_without_overlapping(dashboard: dict[str, Any]) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboard["panels"]:  # top-level panels: a collapsed row's own panels are laid out when opened
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["y"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, f"{panel['title']} runs past the 24 columns"
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]} at {x},{y}"
                cells[(x, y)] = panel["title"]


def test_every_variable_used_is_defined(dashboard: dict[str, Any]) -> None:
    defined = {v["name"] for v in dashboard["templating"]["list"]} | BUILTIN_VARIABLES
    # a variable's `current` holds values (`$__all` is the "All" choice), not text Grafana interpolates
    queries = [{k: v for k, v in variable.items() if k != "current"} for variable in dashboard["templating"]["list"]]
    used = variables_used(json.dumps(dashboard["panels"])) | variables_used(json.dumps(queries))
    assert used - defined == set()
    assert {"datasource", "sink", "table"} <= used  # and each defined one is used


def test_queries_name_only_exported_metrics_and_their_labels(dashboard: dict[str, Any],
                                                             series: dict[str, tuple[str, set[str]]]) -> None:
    for panel, target in expressions(dashboard):
        parsed = Parsed(target["expr"])
        assert parsed.metrics, f"{panel['title']}: no metric in {target['expr']!r}"
        for name, labels in parsed.metrics:
            assert name in series, f"{panel['title']}: {name} is not exported (exported: {sorted(series)})"
            assert set(labels) <= series[name][1], f"{panel['title']}: {name} has no label {set(labels)}"
        assert parsed.calls <= FUNCTIONS | AGGREGATIONS, f"{panel['title']}: {parsed.calls}"
        known = set().union(*(series[n][1] for n, _ in parsed.metrics))
        assert parsed.grouping <= known, f"{panel['title']}: grouping by {parsed.grouping - known}"


def test_rates_are_of_counters_and_quantiles_of_buckets(dashboard: dict[str, Any],
                                                        series: dict[str, tuple[str, set[str]]]) -> None:
    for panel, target in expressions(dashboard):
        expr = VARIABLE.sub("VAR", target["expr"])
        for match in re.finditer(rf"\b(rate|irate|increase)\s*\(\s*({IDENT})", expr):
            kind = series[match.group(2)][0]
            ok = kind == "counter" or (kind == "histogram" and match.group(2).endswith(("_bucket", "_sum", "_count")))
            assert ok, f"{panel['title']}: {match.group(1)} of a {kind}, {match.group(2)}"
        if "histogram_quantile" in expr:
            parsed = Parsed(target["expr"])
            assert all(n.endswith("_bucket") for n, _ in parsed.metrics), panel["title"]
            assert "le" in parsed.grouping, f"{panel['title']}: the buckets' sum must keep `le`"


def test_legends_name_labels_the_query_keeps(dashboard: dict[str, Any]) -> None:
    for panel, target in expressions(dashboard):
        wanted = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
        parsed = Parsed(target["expr"])
        if parsed.grouping:  # an aggregation keeps only what it groups by
            assert wanted <= parsed.grouping, f"{panel['title']}: legend {wanted}, grouped by {parsed.grouping}"


def test_variable_queries_name_exported_metrics_and_labels(dashboard: dict[str, Any],
                                                           series: dict[str, tuple[str, set[str]]]) -> None:
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"] if isinstance(variable["query"], str) else variable["query"]["query"]
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, query
        (metric, labels), = Parsed(match.group(1)).metrics
        assert metric in series and {match.group(2), *labels} <= series[metric][1], query


def test_every_exported_metric_is_on_the_dashboard(dashboard: dict[str, Any],
                                                   series: dict[str, tuple[str, set[str]]]) -> None:
    shown = {name for _, target in expressions(dashboard) for name, _ in Parsed(target["expr"]).metrics}
    families = {re.sub(r"_(total|bucket|sum|count|created)$", "", name) for name in series}
    missing = {f for f in families if not any(re.sub(r"_(total|bucket|sum|count)$", "", s) == f for s in shown)}
    assert missing == set(), f"exported but on no panel: {missing}"


def test_the_tokenizer_finds_what_an_expression_names() -> None:
    parsed = Parsed('histogram_quantile(0.99, sum by (sink, table, le) (rate(kafka_spark_commit_seconds_bucket'
                    '{sink=~"$sink", table=~"${table}"}[$__rate_interval]))) or vector(0)')
    assert parsed.metrics == [("kafka_spark_commit_seconds_bucket", ("sink", "table"))]
    assert parsed.grouping == {"sink", "table", "le"}
    assert parsed.calls == {"histogram_quantile", "sum", "rate", "vector"}
    assert Parsed("time() - max by (table) (x_seconds)").metrics == [("x_seconds", ())]
    assert variables_used('a{b=~"$x", c="${y}", d="[[z]]"}[$__range]') == {"x", "y", "z", "__range"}

"""How the suite runs side by side (pytest-xdist, `--dist loadgroup`): which tests share a worker and in what
order the work goes out.

- A file's tests stay on one worker, so its module fixtures (seeded topics, broker-written segments) are set
  up once.
- Files that use a server few tests need (the 3-node cluster, ZooKeeper and Kafka 3.9, the standalone
  cluster, ...) join that server's group, so each such server starts once per run.
- The groups that took longest in the last measured run go first, so that no long one starts last and
  leaves the other workers idle. `durations.json` holds those seconds per file; it only orders the work, so
  a stale file costs time, never a result. Refresh it from a run's JUnit XML:

      bash .ci/run --junitxml=run.xml && .venv/bin/python tests/scheduling.py run.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
DURATIONS = TESTS / "durations.json"
# A file not measured yet: about what a small integration file takes.
UNMEASURED_SECONDS = 10.0

# Session fixtures of rarely used servers -> their group.
SERVER_GROUPS = {
    "kafka_cluster": "cluster",
    "ensemble": "zookeeper",
    "ensemble_kafka": "zookeeper",
    "zookeeper": "zookeeper",
    "kafka39": "zookeeper",
    "kafka39_legacy": "zookeeper",
    "standalone": "standalone",
    "log_broker": "log-broker",
    "kdc": "kerberos",
    "kerberos_kafka": "kerberos",
    "oauth_server": "oauth",
    "oauth_kafka": "oauth",
    # not a server: the cached environments with other PySparks, which no two workers may use at once
    "pyspark_envs": "pyspark-envs",
}
# Not grouped: `kafka` and `spark` (nearly every test), and `s3` (a Python server up in a second: one per worker
# is cheaper than one long chain of its tests).


def test_file(item: pytest.Item) -> str:
    """The test's file, relative to tests/ (the key of durations.json)."""
    return Path(str(item.fspath)).resolve().relative_to(TESTS.resolve()).as_posix()


def measured() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError):
        return {}


def grouped(config: pytest.Config) -> bool:
    """Whether this run hands out work by xdist group: on the controller `--dist loadgroup`; on a worker,
    where xdist resets `dist`, the flag it keeps instead."""
    return config.getoption("dist", "no") == "loadgroup" or bool(getattr(config.option, "loadgroup", False))


def fixtures_used(item: pytest.Item) -> set[str]:
    """The item's fixtures, with those it asks for by name through a parameter (`request.getfixturevalue`)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {*getattr(item, "fixturenames", ()), *(v for v in params.values() if isinstance(v, str))}


def schedule(items: list[pytest.Item]) -> None:
    """Mark every item with its xdist group and sort the items longest group first (stable within one)."""
    # A file's servers join into one group (union-find), so no rare server starts on two workers.
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for item in items:
        file = test_file(item)
        for fixture, server in SERVER_GROUPS.items():
            if fixture in fixtures_used(item):
                parent[root(file)] = root(server)
    # In sorted order: a group's cost is a float sum, and every xdist worker must add it up in the same order to
    # sort the items the same way (a set's order follows the worker's hash seed; two groups whose sums differed in
    # the last bit between workers made xdist refuse the run).
    group = {file: root(file) for file in sorted({test_file(item) for item in items})}
    seconds = measured()
    cost: dict[str, float] = defaultdict(float)
    for file, name in group.items():
        cost[name] += seconds.get(file, UNMEASURED_SECONDS)
    order = {id(item): n for n, item in enumerate(items)}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group[test_file(item)]))
        name_group(item, group[test_file(item)])
    items.sort(key=lambda item: (-cost[group[test_file(item)]], order[id(item)]))


def group_of(item: pytest.Item) -> str | None:
    """The xdist group `schedule` gave the item (None when the run is not grouped)."""
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker and marker.args else None


class RareServers:
    """The rare servers' session fixtures set up on this worker, finished after the last test of their group.

    Every test that uses a rare server is in that server's group, and a group's tests run one after another on
    one worker: after the last one its servers stop, rather than idle to the end of the run (an idle broker takes
    1-3% of a core, and the suite is CPU-bound). They stop through pytest (`FixtureDef.finish`, which finishes
    the fixtures that depend on them first), so a later request, were there one, would start them again."""

    def __init__(self) -> None:
        self._started: list[tuple[Any, Any]] = []

    def started(self, fixturedef: Any, request: Any) -> None:
        """A fixture was set up."""
        if fixturedef.argname in SERVER_GROUPS:
            self._started.append((fixturedef, request))

    def after(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """`item` is torn down and `nextitem` comes next: at the end of a group, finish its servers, last first."""
        group = group_of(item)
        if nextitem is None or group is None or group_of(nextitem) == group:
            return
        while self._started:
            fixturedef, request = self._started.pop()
            fixturedef.finish(request)


class RareServersPlugin:
    """`RareServers` as a plugin: registered with the plugin manager, so that it also sees the session fixtures,
    whose hooks a conftest below the root directory does not get."""

    def __init__(self) -> None:
        self.servers = RareServers()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Generator[None]:
        result = yield
        self.servers.started(fixturedef, request)
        return result

    @pytest.hookimpl(trylast=True)  # after pytest's own teardown of the test's narrower fixtures
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        self.servers.after(item, nextitem)


def name_group(item: pytest.Item, name: str) -> None:
    """Give the item the `@group` node-id suffix by which xdist's controller groups work. xdist 3.8 writes it
    to `Item._nodeid`, which pytest 9 no longer reads (node ids come from `Item._id`), so its `loadgroup`
    would spread every group over all workers; here it is written where pytest 9 reads it."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:
        return  # pytest 8: xdist's own suffix works
    item._id = NodeId.parse(f"{item.nodeid}@{name}")  # type: ignore[attr-defined]


def update(junit_xml: Path) -> dict[str, float]:
    """Seconds per test file from a JUnit XML report (setup, call and teardown), written to durations.json."""
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        file = file.removeprefix("tests/")
        totals[file] += float(case.get("time") or 0.0)
    rounded = {file: round(total, 1) for file, total in sorted(totals.items())}
    DURATIONS.write_text(json.dumps(rounded, indent=1) + "\n")
    return rounded


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tests/scheduling.py RUN.xml")
    print(f"{len(update(Path(sys.argv[1])))} files measured into {DURATIONS}")

"""The suite's own scheduling (tests/scheduling.py): groups by file and rare server, longest group first."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import scheduling


class Item:
    """What schedule() reads of a pytest item: its file, its fixtures, its markers and its node id."""

    def __init__(self, file: str, *fixtures: str, params: dict[str, object] | None = None) -> None:
        self.fspath = scheduling.TESTS / file
        self.fixturenames = fixtures
        self.callspec = SimpleNamespace(params=params or {})
        self.markers: list[pytest.Mark] = []
        self.nodeid = f"tests/{file}::test"
        self._id: object = None

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.mark)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next((m for m in self.markers if m.name == name), None)

    @property
    def group(self) -> str:
        (mark,) = [m for m in self.markers if m.name == "xdist_group"]
        return mark.args[0]


def test_files_sharing_a_rare_server_share_a_group_and_long_groups_go_first(monkeypatch) -> None:
    monkeypatch.setattr(scheduling, "measured", lambda: {"a/short.py": 1.0, "a/long.py": 50.0, "a/zk_one.py": 30.0,
                                                         "a/zk_two.py": 30.0})
    items = [Item("a/short.py", "kafka"), Item("a/zk_one.py", "kafka", "zookeeper"), Item("a/long.py", "spark"),
             Item("a/zk_two.py", "kafka39", "zookeeper"), Item("a/short.py", "kafka")]
    scheduling.schedule(items)  # type: ignore[arg-type]
    groups = {Path(str(i.fspath)).name: i.group for i in items}
    assert groups["zk_one.py"] == groups["zk_two.py"] != groups["long.py"]
    assert groups["short.py"] == "a/short.py"  # a file without a rare server is a group of its own
    # 60 s of ZooKeeper tests, then the 50 s file, then the 1 s one (its two tests together, in their order)
    assert [Path(str(i.fspath)).name for i in items] == ["zk_one.py", "zk_two.py", "long.py", "short.py", "short.py"]


def test_a_file_using_two_rare_servers_joins_their_groups() -> None:
    # both.py asks for kafka39 by name through a parameter (request.getfixturevalue)
    items = [Item("b/zk.py", "zookeeper"), Item("b/both.py", "kafka_cluster"),
             Item("b/both.py", "broker", params={"broker": "kafka39"}), Item("b/cluster.py", "kafka_cluster")]
    scheduling.schedule(items)  # type: ignore[arg-type]
    assert len({i.group for i in items}) == 1
    # the group reaches xdist's controller as the node id's suffix, on pytest 9 too
    assert {str(i._id).rsplit("@", 1)[-1] for i in items if i._id is not None} <= {items[0].group}


@pytest.mark.parametrize(("option", "expected"), [
    (SimpleNamespace(dist="loadgroup"), True),  # the controller
    (SimpleNamespace(dist="no", loadgroup=True), True),  # a worker: xdist resets dist and keeps this flag
    (SimpleNamespace(dist="no", loadgroup=False), False),
    (SimpleNamespace(dist="load"), False),
])
def test_grouping_is_on_for_the_controller_and_its_workers(option, expected) -> None:
    config = SimpleNamespace(option=option, getoption=lambda name, default=None: getattr(option, name, default))
    assert scheduling.grouped(config) is expected  # type: ignore[arg-type]


class Fixture:
    """What RareServers reads of a pytest FixtureDef: its name, and `finish`, which it calls."""

    def __init__(self, argname: str, finished: list[str]) -> None:
        self.argname, self._finished = argname, finished

    def finish(self, request: object) -> None:
        self._finished.append(self.argname)


def test_rare_servers_stop_after_the_last_test_of_their_group() -> None:
    items = [Item("c/zk.py", "zookeeper", "kafka39"), Item("c/zk.py", "kafka39"), Item("c/ensemble.py", "ensemble"),
             Item("c/plain.py", "kafka"), Item("c/plain.py", "kafka")]
    scheduling.schedule(items)  # type: ignore[arg-type]
    zk, zk2, ensemble, plain, plain2 = items  # in schedule()'s order: the ZooKeeper group first, one file of it
    assert [Path(str(i.fspath)).name for i in items] == ["zk.py", "zk.py", "ensemble.py", "plain.py", "plain.py"]
    assert zk.group == ensemble.group != plain.group
    finished: list[str] = []
    servers = scheduling.RareServers()
    for name in ("zookeeper", "kafka39", "kafka"):  # `kafka` is on every worker: never stopped early
        servers.started(Fixture(name, finished), request=None)
    servers.after(zk, zk2)  # type: ignore[arg-type]
    assert finished == []  # the group goes on
    servers.started(Fixture("ensemble", finished), request=None)
    servers.after(zk2, ensemble)  # type: ignore[arg-type]
    assert finished == []  # the ensemble's file is in the same group
    servers.after(ensemble, plain)  # type: ignore[arg-type]
    assert finished == ["ensemble", "kafka39", "zookeeper"]  # last started, first stopped
    servers.after(plain, plain2)  # type: ignore[arg-type]
    servers.after(plain2, None)  # type: ignore[arg-type]  (the run's end: pytest's own teardown)
    assert finished == ["ensemble", "kafka39", "zookeeper"]


def test_an_ungrouped_run_stops_nothing_early() -> None:
    finished: list[str] = []
    servers = scheduling.RareServers()
    servers.started(Fixture("kafka_cluster", finished), request=None)
    servers.after(Item("d/a.py", "kafka_cluster"), Item("d/b.py", "kafka"))  # type: ignore[arg-type]
    assert finished == []

"""The suite's own scheduling (tests/scheduling.py): groups by file and rare server, longest group first."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import scheduling


class Item:
    """What schedule() reads of a pytest item: its file, its fixtures, its markers."""

    def __init__(self, file: str, *fixtures: str) -> None:
        self.fspath = scheduling.TESTS / file
        self.fixturenames = fixtures
        self.markers: list[pytest.Mark] = []

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.mark)

    @property
    def group(self) -> str:
        (mark,) = [m for m in self.markers if m.name == "xdist_group"]
        return mark.args[0]


def test_files_sharing_a_rare_server_share_a_group_and_long_groups_go_first(monkeypatch) -> None:
    monkeypatch.setattr(scheduling, "measured", lambda: {"a/short.py": 1.0, "a/long.py": 50.0, "a/s3_one.py": 30.0,
                                                         "a/s3_two.py": 30.0})
    items = [Item("a/short.py", "kafka"), Item("a/s3_one.py", "kafka", "s3"), Item("a/long.py", "spark"),
             Item("a/s3_two.py", "spark_s3", "s3"), Item("a/short.py", "kafka")]
    scheduling.schedule(items)  # type: ignore[arg-type]
    groups = {Path(str(i.fspath)).name: i.group for i in items}
    assert groups["s3_one.py"] == groups["s3_two.py"] != groups["long.py"]
    assert groups["short.py"] == "a/short.py"  # a file without a rare server is a group of its own
    # 60 s of s3 tests, then the 50 s file, then the 1 s one (its two tests together, in their order)
    assert [Path(str(i.fspath)).name for i in items] == ["s3_one.py", "s3_two.py", "long.py", "short.py", "short.py"]


def test_a_file_using_two_rare_servers_joins_their_groups() -> None:
    items = [Item("b/zk.py", "zookeeper"), Item("b/both.py", "kafka_cluster"), Item("b/both.py", "kafka39"),
             Item("b/cluster.py", "kafka_cluster")]
    scheduling.schedule(items)  # type: ignore[arg-type]
    assert len({i.group for i in items}) == 1


@pytest.mark.parametrize(("option", "expected"), [
    (SimpleNamespace(dist="loadgroup"), True),  # the controller
    (SimpleNamespace(dist="no", loadgroup=True), True),  # a worker: xdist resets dist and keeps this flag
    (SimpleNamespace(dist="no", loadgroup=False), False),
    (SimpleNamespace(dist="load"), False),
])
def test_grouping_is_on_for_the_controller_and_its_workers(option, expected) -> None:
    config = SimpleNamespace(option=option, getoption=lambda name, default=None: getattr(option, name, default))
    assert scheduling.grouped(config) is expected  # type: ignore[arg-type]

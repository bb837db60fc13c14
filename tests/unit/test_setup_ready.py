"""`.ci/setup` (which spark-submit.sh runs before every job) returns at once when it has set this checkout up
before and everything it made is still there; a missing jar folder or class archive makes it run in full again.
A set-up for another cache folder (a test's private cache, whose jar folders link to this one's) keeps a stamp of
its own, leaves this one's in place, and shares the class archives rather than writing its own.

The jobs' set-up holds what the jobs run; the tests' (`.ci/setup --tests`, which .ci/run runs) adds its own layer
(the test servers, the class archives) with stamps of its own: neither makes the other redo its part."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from harness.cache import private_cache
from harness.fetch import TEST_SETS

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / ".ci" / "setup"


def _setup(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SETUP), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=900, check=False, env=env)


def _ready_file(*layer: str, env: dict[str, str] | None = None) -> Path:
    return Path(_setup(*layer, "--ready-file", env=env).stdout.strip())


def _archives(stamp: Path) -> list[Path]:
    """The class archives a set-up's stamp lists."""
    return [Path(p) for p in stamp.read_text().splitlines() if p.endswith(".jsa")]


def _extras(name: str) -> list[str]:
    found = re.search(rf"^{name}=(\S+)$", SETUP.read_text(), re.MULTILINE)
    assert found, name
    return found.group(1).split(",")


def test_a_set_up_checkout_is_ready_at_once_and_a_missing_part_runs_the_set_up_again(tmp_path: Path) -> None:
    first = _setup()
    assert first.returncode == 0, first.stderr[-3000:]
    ready = _ready_file()
    made = ready.read_text().splitlines()
    # the jar folders of `kafka-spark local fetch`, each one there; no class archive (the first job's JVMs write them)
    assert {Path(p).name.split("-")[0] for p in made} == {"kafka4", "spark", "s3a"}
    assert all("/jars/" in p and Path(p).is_dir() for p in made)

    again = _setup()
    assert again.returncode == 0 and again.stderr == "" and again.stdout == ""

    gone = tmp_path / "deleted-jars"
    ready.write_text("\n".join([*made, str(gone)]) + "\n")
    full = _setup()
    assert full.returncode == 0, full.stderr[-3000:]
    assert "kafka4: " in full.stderr  # the full set-up ran and said what it made
    assert ready.read_text().splitlines() == made


def test_another_cache_has_its_own_stamps_and_shares_the_class_archives(tmp_path: Path) -> None:
    assert _setup("--tests").returncode == 0
    ready = _ready_file("--tests")
    archives = sorted(a.name for a in _archives(ready))
    folder = _archives(ready)[0].parent
    before = set(os.listdir(folder))

    env = private_cache(tmp_path)
    theirs = _ready_file("--tests", env=env)
    assert theirs != ready and _ready_file(env=env) != _ready_file()
    private = _setup("--tests", env=env)
    assert private.returncode == 0, private.stderr[-3000:]
    # the same archives, reached through the private cache's link: none written for it
    assert sorted(a.name for a in _archives(theirs)) == archives
    assert set(os.listdir(folder)) == before
    # all stamps stand: each set-up is ready at once
    for args, environment in [((), None), (("--tests",), None), ((), env), (("--tests",), env)]:
        assert _setup(*args, env=environment).stderr == ""

    # a stamp whose folders are gone goes with the next full set-up of its layer
    stale = ready.with_name(".kafka-spark-tests-ready-stale")
    stale.write_text(f"{tmp_path / 'gone'}\n")
    ready.write_text(ready.read_text() + f"{tmp_path / 'missing.jsa'}\n")
    assert "class archive: " in _setup("--tests").stderr
    assert not stale.exists() and theirs.exists()


def test_the_jobs_set_up_has_none_of_the_tests_parts_and_each_layer_redoes_only_its_own(tmp_path: Path) -> None:
    tests = _setup("--tests")
    assert tests.returncode == 0, tests.stderr[-3000:]
    runtime, ready = _ready_file(), _ready_file("--tests")
    assert runtime != ready
    jobs, theirs = runtime.read_text().splitlines(), ready.read_text().splitlines()
    # the tests' layer: the jars of the servers only the tests start, and the class archives of the suite's JVMs
    # (Spark's driver, Kafka 4, Kafka 3.9, ZooKeeper); the jobs' layer has none of them
    assert {Path(p).name for p in theirs if "/jars/" in p} == set(TEST_SETS)
    assert {Path(p).name.split("-")[0] for p in theirs if p.endswith(".jsa")} == {"spark", "Kafka", "QuorumPeerMain"}
    assert not set(jobs) & set(theirs)
    assert _setup().stderr == "" and _setup("--tests").stderr == ""

    # a part of the tests' layer gone: the jobs' set-up is still ready at once, the tests' redoes only its layer
    ready.write_text("\n".join([*theirs, str(tmp_path / "gone.jsa")]) + "\n")
    assert _setup().stderr == ""
    again = _setup("--tests")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "kafka39: " in again.stderr and "kafka4: " not in again.stderr and "installing" not in again.stderr
    assert ready.read_text().splitlines() == theirs

    # a part of the jobs' layer gone: either set-up redoes only that layer, and the tests' stamp stands
    runtime.write_text("\n".join([*jobs, str(tmp_path / "gone")]) + "\n")
    redo = _setup("--tests")
    assert redo.returncode == 0, redo.stderr[-3000:]
    assert "kafka4: " in redo.stderr and "kafka39: " not in redo.stderr and "installing" not in redo.stderr
    assert runtime.read_text().splitlines() == jobs and ready.exists()


def test_the_jobs_install_the_runtime_with_delta_and_the_tests_every_extra() -> None:
    tomllib = pytest.importorskip("tomllib")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    # the jobs' first run installs what the jobs import; the suite covers every extra
    assert _extras("RUNTIME_EXTRAS") == ["delta"]
    assert sorted(_extras("TEST_EXTRAS")) == sorted(declared)

"""`kafka-spark local start|status|stop` manages a broker that outlives the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.cache import private_cache

from kafka_spark.client.net.probe import api_versions


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_spark.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_local_broker_lifecycle(tmp_path: Path):
    env = private_cache(tmp_path)

    assert _cli(env, "local", "status").returncode == 1
    started = _cli(env, "local", "start", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        host, port = info["bootstrap"].split(":")
        assert api_versions(host, int(port))
        again = _cli(env, "local", "start")
        assert again.stdout.startswith("already running")
        status = _cli(env, "local", "status")
        assert status.returncode == 0 and info["bootstrap"] in status.stdout
    finally:
        stopped = _cli(env, "local", "stop")
    assert stopped.stdout.strip() == "stopped"
    assert not Path(f"/proc/{info['pid']}").exists() or \
        Path(f"/proc/{info['pid']}/stat").read_text().split()[2] == "Z"
    assert _cli(env, "local", "status").stdout.strip() == "not running"

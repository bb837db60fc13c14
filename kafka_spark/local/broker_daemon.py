"""A single-node broker that outlives the command that started it (demos, notebooks, the main job)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kafka_spark.client.net.probe import answers
from kafka_spark.local.jars import cache_dir
from kafka_spark.local.kafka import start_kafka


@dataclass
class LocalBroker:
    """What `kafka-spark local start` recorded about the broker it started."""

    pid: int
    bootstrap: str
    listeners: dict[str, int]
    data_dir: str
    ca_pem: str | None = None


def state_file() -> Path:
    return cache_dir() / "local" / "broker.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); it is not serving.
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return False
    return True


def status() -> LocalBroker | None:
    """The running local broker, or None if none is running (a stale record is removed)."""
    path = state_file()
    if not path.exists():
        return None
    broker = LocalBroker(**json.loads(path.read_text()))
    if not _pid_alive(broker.pid):
        path.unlink(missing_ok=True)
        return None
    return broker


def responding(broker: LocalBroker) -> bool:
    """Whether the broker answers ApiVersions on its PLAINTEXT listener."""
    return answers("127.0.0.1", broker.listeners["PLAINTEXT"], timeout=2.0)


def start(secure: bool = False, timeout: float = 90.0) -> tuple[LocalBroker, bool]:
    """Start the local broker unless one runs; return it and whether it was started now."""
    running = status()
    if running is not None:
        return running, False
    data_dir = cache_dir() / "local" / "kafka4"
    node = start_kafka(data_dir, secure=secure, timeout=timeout)
    assert node.process is not None and node.process.pid is not None
    node.process.detach()
    broker = LocalBroker(pid=node.process.pid, bootstrap=node.bootstrap, listeners=dict(node.listeners),
                         data_dir=str(node.data_dir), ca_pem=str(node.ca_pem) if node.ca_pem else None)
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(asdict(broker), indent=2))
    return broker, True


def stop(grace: float = 30.0) -> bool:
    """Stop the local broker; return False if none was running."""
    broker = status()
    if broker is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(broker.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _pid_alive(broker.pid):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(broker.pid, signal.SIGKILL)
    state_file().unlink(missing_ok=True)
    return True

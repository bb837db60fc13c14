"""A Spark standalone cluster (one master, N workers) from the pip-installed PySpark, on 127.0.0.1.

Executors run in the workers' JVMs and fork Python workers with `python` (the interpreter that has
kafka_spark installed), so a job on this cluster exercises everything that must survive pickling
and separate processes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

from kafka_spark.local.process import ServerProcess, ServerStartError, free_ports


def spark_home() -> Path:
    """The pyspark package directory, which ships `bin/spark-class` and Spark's jars."""
    import pyspark

    return Path(pyspark.__file__).parent


class StandaloneCluster:
    """`workers` workers with `cores` cores and `memory` each; `submit_conf()` fits applications to them."""

    def __init__(self, data_dir: Path | None = None, workers: int = 2, cores: int = 1, memory: str = "1g",
                 python: str = sys.executable) -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-standalone-"))
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python
        ports = free_ports(2 + 2 * workers)
        self.port, self.ui_port = ports[0], ports[1]
        self._worker_ports = [(ports[2 + 2 * i], ports[3 + 2 * i]) for i in range(workers)]
        self.processes: list[ServerProcess] = []

    @property
    def url(self) -> str:
        """The master URL for `--master` / `spark.master`."""
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.data_dir / "logs"),
            "PYSPARK_PYTHON": self.python,
            # The daemons themselves need little heap; executors get spark.executor.memory.
            "SPARK_DAEMON_MEMORY": "256m",
        })
        return env

    def _daemon(self, name: str, main: str, *args: str) -> ServerProcess:
        argv = [str(spark_home() / "bin" / "spark-class"), main, *args]
        proc = ServerProcess(name, argv, self.data_dir / "logs" / f"{name}.log", env=self._env())
        self.processes.append(proc)
        return proc.start()

    def status(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as resp:
            return json.load(resp)

    def alive_workers(self) -> int:
        """Workers registered with the master and alive."""
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def _workers_alive(self, count: int) -> bool:
        # While the master starts, its UI may answer with an empty or partial page.
        try:
            return "workers" in self.status() and self.alive_workers() >= count
        except ValueError:
            return False

    def start(self, timeout: float = 90.0) -> StandaloneCluster:
        """Start the master and the workers; return once every worker has registered."""
        try:
            master = self._daemon("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(self.port), "--webui-port", str(self.ui_port))
            master.wait_ready(lambda: self._workers_alive(0), timeout)
            # A port that was free when chosen may be taken by the time the master binds (other servers start
            # beside it); the master then moves to the next one, and its status says where.
            self.port = int(self.status()["url"].rsplit(":", 1)[1])
            for i, (port, ui_port) in enumerate(self._worker_ports):
                work_dir = self.data_dir / f"worker-{i + 1}"
                work_dir.mkdir(parents=True, exist_ok=True)
                self._daemon(f"worker-{i + 1}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--port", str(port), "--webui-port", str(ui_port), "--cores", str(self.cores),
                             "--memory", self.memory, "--work-dir", str(work_dir), self.url)
            master.wait_ready(lambda: self._workers_alive(self.workers), timeout)
            for proc in self.processes[1:]:
                if not proc.alive():
                    raise ServerStartError(f"{proc.name} exited; see {proc.log_path}")
        except BaseException:
            self.stop()
            raise
        return self

    def executor_logs(self) -> list[Path]:
        """The stderr files of every executor the workers have launched (`worker-N/<app>/<executor>/stderr`)."""
        return sorted(self.data_dir.glob("worker-*/app-*/*/stderr"))

    def submit_conf(self) -> dict[str, str]:
        """Settings that let an application get one executor per worker within the workers' limits."""
        return {
            "spark.master": self.url,
            "spark.executor.cores": str(self.cores),
            "spark.executor.memory": "512m",
            "spark.cores.max": str(self.cores * self.workers),
        }

    def stop(self) -> None:
        """Stop workers first, then the master (each with its whole process group); idempotent."""
        for proc in reversed(self.processes):
            proc.stop(grace=10)
        self.processes.clear()

    def remove(self) -> None:
        """Stop and delete the data directory."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

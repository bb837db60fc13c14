"""A PostgreSQL server on 127.0.0.1 for the change-data-capture tests: a fresh cluster (`initdb`) in a folder of its
own, `wal_level=logical` so that Debezium's PostgreSQL connector can stream its changes, a free port, its unix
socket in that folder, stopped with the fixture.

PostgreSQL refuses to run as root (`initdb` and `postgres` both exit), and CI runs as root: a root process runs them
as the `postgres` user that Debian's package creates (else `nobody`), through util-linux's `setpriv`, with the
cluster in a folder of /tmp that user owns (pytest's own folders are private to root). Clients (`psql`) connect over
TCP as the `postgres` superuser, trusted on 127.0.0.1 only: the server is a throwaway of the test run.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kafka_spark.local.process import ServerProcess, ServerStartError, free_port

INSTALL_HINT = "apt-get install postgresql-15 (or another postgresql-NN package; .ci/setup --tests installs it)"
SUPERUSER = "postgres"
# Fast and throwaway: nothing is worth an fsync in a test cluster that is deleted when the test ends.
SETTINGS = {
    "wal_level": "logical",
    "max_wal_senders": "4",
    "max_replication_slots": "4",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "30",
    "timezone": "UTC",
}


def bin_dir() -> Path:
    """The folder of PostgreSQL's server programs: `$KAFKA_SPARK_PG_BIN`, else the newest Debian install
    (/usr/lib/postgresql/NN/bin), else wherever `pg_ctl` is on the PATH."""
    explicit = os.environ.get("KAFKA_SPARK_PG_BIN")
    if explicit:
        return Path(explicit)
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                    if p.parent.parent.name.isdigit() else 0)
    if debian:
        return debian[-1].parent
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise ServerStartError(f"PostgreSQL's server is not installed ({INSTALL_HINT})")


def _owner() -> str | None:
    """The user the server runs as when this process is root (None: as this process's user)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise ServerStartError("running as root and there is no `postgres` (or `nobody`) user to run PostgreSQL as")


class PostgresServer:
    """One PostgreSQL cluster on 127.0.0.1:`port`; `psql` runs SQL in it, `query_json` reads rows."""

    def __init__(self, data_dir: Path | None = None, database: str = "inventory") -> None:
        self.log_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-postgres-")).resolve()
        self.database = database
        self.bin = bin_dir()
        self.user = _owner()
        # root: the cluster goes to a folder the server's user owns, removed by stop()
        self.home = Path(tempfile.mkdtemp(prefix="kafka-spark-pgdata-")) if self.user else self.log_dir / "cluster"
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def cluster(self) -> Path:
        return self.home / "data"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    @property
    def log_path(self) -> Path:
        return self.log_dir / "postgres.log"

    def _as_owner(self, argv: list[str]) -> list[str]:
        if self.user is None:
            return argv
        return ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", "--", *argv]

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """initdb, then the server in the foreground (supervised); returns once it accepts queries."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self.user:
            entry = pwd.getpwnam(self.user)
            for path in (self.home, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        initdb = [str(self.bin / "initdb"), "-D", str(self.cluster), "-U", SUPERUSER, "--auth=trust",
                  "-E", "UTF8", "--locale=C", "--no-sync"]
        done = subprocess.run(self._as_owner(initdb), capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, cwd=self.home, check=False)
        if done.returncode:
            raise ServerStartError(f"initdb failed ({done.returncode}): {(done.stderr or done.stdout)[-800:]}")
        self.port = free_port()
        settings = {**SETTINGS, "listen_addresses": "127.0.0.1", "port": str(self.port),
                    "unix_socket_directories": str(self.socket_dir)}
        argv = [str(self.bin / "postgres"), "-D", str(self.cluster), *(a for k, v in settings.items()
                                                                       for a in ("-c", f"{k}={v}"))]
        self.process = ServerProcess("postgres", self._as_owner(argv), self.log_path).start()
        self.process.wait_ready(self._ready, timeout)
        self.psql(f"CREATE DATABASE {self.database}", database="postgres")
        return self

    def _ready(self) -> bool:
        done = subprocess.run([str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
                              capture_output=True, timeout=10, check=False)
        return done.returncode == 0

    def psql(self, sql: str, database: str | None = None) -> str:
        """Run `sql` (one or more statements; a single transaction unless it manages its own) with psql; its
        unaligned, tuples-only output. Fails on the first error."""
        argv = [str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                "-p", str(self.port), "-U", SUPERUSER, "-d", database or self.database]
        done = subprocess.run(argv, input=sql, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()[-800:]}\nSQL: {sql[:400]}")
        return done.stdout

    def query_json(self, select: str) -> list[dict[str, Any]]:
        """The rows of `select` as PostgreSQL's own JSON renders them (numbers exact: parsed as Decimal)."""
        from decimal import Decimal

        out = self.psql(f"SELECT coalesce(json_agg(q), '[]'::json) FROM ({select}) AS q")
        rows: list[dict[str, Any]] = json.loads(out, parse_float=Decimal)
        return rows

    def stop(self) -> None:
        """Fast shutdown (SIGINT: open sessions, a replication connection among them, are ended), then the
        cluster's folder goes."""
        if self.process is not None and self.process.proc is not None:
            self.process.signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.proc.wait(timeout=20)
            self.process.stop(grace=5)
        if self.user:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_postgres(data_dir: Path | None = None, database: str = "inventory",
                   timeout: float = 60.0) -> PostgresServer:
    """Start a PostgreSQL cluster with logical decoding and one database, `database`."""
    return PostgresServer(data_dir, database).start(timeout)

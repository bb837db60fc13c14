"""An S3-compatible server on 127.0.0.1 (moto's standalone server) with a bucket, for s3a:// and delta-rs."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from kafka_spark.errors import KafkaSparkError
from kafka_spark.local.process import ServerProcess, free_port

# Test credentials of the local server; it accepts any, and they guard nothing but loopback.
ACCESS_KEY = "kafka-spark-local"
SECRET_KEY = "kafka-spark-local-secret"
REGION = "us-east-1"


class S3Server:
    """moto's S3 on 127.0.0.1 with one bucket; objects live in the server's memory until it stops."""

    def __init__(self, data_dir: Path | None = None, bucket: str = "lake") -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-s3-"))
        self.bucket = bucket
        self.port = free_port()
        self.access_key = ACCESS_KEY
        self.secret_key = SECRET_KEY
        self.region = REGION
        self.process: ServerProcess | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "", scheme: str = "s3a") -> str:
        """`scheme://bucket/path`: s3a for Spark, s3 for delta-rs."""
        return f"{scheme}://{self.bucket}/{path.lstrip('/')}"

    def hadoop_conf(self) -> dict[str, str]:
        """The `fs.s3a.*` settings that point Hadoop's S3A file system at this server."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": self.region,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
        }

    def spark_conf(self) -> dict[str, str]:
        """`hadoop_conf` as Spark configs (`spark.hadoop.` prefix), for a builder or spark-submit."""
        return {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf().items()}

    def create_bucket(self, name: str) -> str:
        """Create another bucket (moto takes unsigned requests); returns its name."""
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{name}", method="PUT"), timeout=10).close()
        return name

    def _answers(self) -> bool:
        # Any HTTP answer, an error status included, means the server is up; no answer raises OSError.
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(f"{self.endpoint}/", timeout=1).close()
        return True

    def start(self, timeout: float = 60.0) -> S3Server:
        if importlib.util.find_spec("moto") is None:
            raise KafkaSparkError("the local S3 server needs moto: pip install 'moto[server]'")
        argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = ServerProcess("s3", argv, self.data_dir / "s3.log").start()
        self.process.wait_ready(self._answers, timeout)
        self.create_bucket(self.bucket)
        return self

    def stop(self) -> None:
        if self.process:
            self.process.stop(grace=10)

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_s3(data_dir: Path | None = None, bucket: str = "lake", timeout: float = 60.0) -> S3Server:
    """Start an S3-compatible server on a free port of 127.0.0.1 with `bucket` created."""
    return S3Server(data_dir, bucket).start(timeout)

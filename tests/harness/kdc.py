"""An MIT Kerberos KDC on 127.0.0.1 for the Kerberos (GSSAPI) tests: its own realm, database, krb5.conf
and logs in one folder, on a free port, supervised like the other local servers.

`krb5kdc -n` runs in the foreground with `KRB5_KDC_PROFILE` (kdc.conf) and `KRB5_CONFIG` (krb5.conf) pointing
into the folder; the database comes from `kdb5_util create -s`, principals and keytabs from `kadmin.local`
(no kadmind). The krb5.conf serves both MIT clients (`KRB5_CONFIG`) and Java (`-Djava.security.krb5.conf`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from kafka_spark.local.process import ServerProcess, ServerStartError

REALM = "KAFKA-SPARK.TEST"
INSTALL_HINT = "apt-get install krb5-kdc krb5-admin-server krb5-user"


def kerberos_tool(name: str) -> str:
    """The path of an MIT Kerberos program; the servers live in /usr/sbin, which a non-root PATH may lack."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if not found:
        raise ServerStartError(f"{name} is not installed ({INSTALL_HINT})")
    return found


def _free_tcp_and_udp_port() -> int:
    # the KDC serves both; clients use TCP (udp_preference_limit = 1), but a taken UDP port would stop it
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port


class Kdc:
    """One KDC for `realm` on 127.0.0.1; `krb5_conf` is the client configuration that finds it."""

    def __init__(self, data_dir: Path | None = None, realm: str = REALM) -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-kdc-")).resolve()
        self.realm = realm
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.data_dir / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        return self.data_dir / "kdc.conf"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "kdc.log"

    def env(self) -> dict[str, str]:
        """This process's environment with the MIT Kerberos tools pointed at this KDC."""
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _write_configs(self) -> None:
        d = self.data_dir
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f" kdc_listen = 127.0.0.1:{self.port}\n"
            f" kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            "[realms]\n"
            f" {self.realm} = {{\n"
            f"  database_name = {d / 'principal'}\n"
            f"  key_stash_file = {d / 'stash'}\n"
            f"  acl_file = {d / 'kadm5.acl'}\n"
            "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
            # renewable tickets, as most realms grant them (`kinit -r`, and `kinit -R` renewing them)
            "  max_life = 1d\n"
            "  max_renewable_life = 7d\n"
            " }\n"
            "[logging]\n"
            f" kdc = FILE:{self.log_path}\n"
            f" admin_server = FILE:{d / 'kadmin.log'}\n"
        )
        # Both MIT and Java read it. No DNS: the realm and its KDC are written here, and host names stay as
        # given (rdns and canonicalization off), so kafka/localhost is the broker's principal for 127.0.0.1
        # (Java's client reverse-resolves the address). TCP only, for both libraries alike.
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f" default_realm = {self.realm}\n"
            " dns_lookup_kdc = false\n"
            " dns_lookup_realm = false\n"
            " rdns = false\n"
            " dns_canonicalize_hostname = false\n"
            " udp_preference_limit = 1\n"
            " kdc_timeout = 3000\n"
            " max_retries = 1\n"
            " forwardable = false\n"
            "[realms]\n"
            f" {self.realm} = {{\n"
            f"  kdc = 127.0.0.1:{self.port}\n"
            " }\n"
            "[domain_realm]\n"
            f" localhost = {self.realm}\n"
            f" .localhost = {self.realm}\n"
        )

    def _run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env(), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=60)
        if done.returncode:
            raise ServerStartError(f"{Path(argv[0]).name} failed ({done.returncode}): "
                                   f"{(done.stderr or done.stdout).strip()[-400:]}")
        return done.stdout

    def start(self, timeout: float = 30.0) -> Kdc:
        """Create the realm's database and serve it; returns once the KDC accepts TCP connections."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_tcp_and_udp_port()
        self._write_configs()
        # the master key protects nothing but this throwaway database; it goes to the stash file only
        self._run(kerberos_tool("kdb5_util"), "create", "-s", "-r", self.realm, "-P", secrets.token_hex(16))
        argv = [kerberos_tool("krb5kdc"), "-n", "-r", self.realm]
        self.process = ServerProcess("kdc", argv, self.data_dir / "krb5kdc.out", env=self.env()).start()
        self.process.wait_ready(self._accepts, timeout)
        return self

    def _accepts(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
            return True

    def kadmin(self, query: str) -> str:
        """Run one `kadmin.local` query against this realm's database."""
        return self._run(kerberos_tool("kadmin.local"), "-r", self.realm, "-q", query)

    def add_principal(self, name: str) -> str:
        """Create `name` (e.g. `kafka/localhost` or `alice`) with a random key; returns `name@REALM`."""
        principal = name if "@" in name else f"{name}@{self.realm}"
        self.kadmin(f"addprinc -randkey {principal}")
        return principal

    def export_keytab(self, principal: str, path: Path) -> Path:
        """Write `principal`'s current keys to the keytab `path` (-norandkey: earlier keytabs stay valid)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.kadmin(f"ktadd -k {path} -norandkey {principal}")
        return path

    def principal_with_keytab(self, name: str, path: Path) -> tuple[str, Path]:
        """A new principal and its keytab."""
        principal = self.add_principal(name)
        return principal, self.export_keytab(principal, path)

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> Path:
        """Fill the ticket cache `ccache` (a file) with `principal`'s ticket from `keytab`, as a user's kinit."""
        self._run(kerberos_tool("kinit"), "-k", "-t", str(keytab), "-c", f"FILE:{ccache}", principal)
        return ccache

    def stop(self) -> None:
        if self.process:
            self.process.stop(grace=5)

    def __enter__(self) -> Kdc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_kdc(data_dir: Path | None = None, realm: str = REALM, timeout: float = 30.0) -> Kdc:
    """Start a KDC for `realm` on 127.0.0.1."""
    return Kdc(data_dir, realm).start(timeout)

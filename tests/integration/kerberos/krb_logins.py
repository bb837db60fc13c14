"""Client logins of the Kerberos tests: a principal with its keytab, and the client properties a Java user
writes for the GSSAPI listener."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ClientLogin:
    """A client principal and its keytab."""

    principal: str
    keytab: Path

    def jaas(self) -> str:
        from harness.kerberos_kafka import krb5_login

        return krb5_login(self.keytab, self.principal)


def gssapi_config(node, login: ClientLogin | None = None, **extra: str) -> dict[str, str]:
    """Client properties for the GSSAPI listener, as a Java client's (keytab login unless `extra` replaces it)."""
    from harness.kerberos_kafka import KERBEROS_LISTENER, SERVICE_NAME

    conf = {"bootstrap.servers": node.address(KERBEROS_LISTENER), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": SERVICE_NAME}
    if login is not None:
        conf["sasl.jaas.config"] = login.jaas()
    return {**conf, **extra}

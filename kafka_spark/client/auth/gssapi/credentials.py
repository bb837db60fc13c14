"""A GSSAPI login's Kerberos credentials, from the `Krb5LoginModule` options a Java client already has.

- `useKeyTab=true keyTab="..." principal="..."`: from the keytab, into a ticket cache in this process's
  memory; MIT Kerberos gets a new ticket from the keytab when one expires, as Java's login thread does.
- `useTicketCache=true [ticketCache="..."] [principal="..."]`: a ticket cache `kinit` filled: the one named,
  else `KRB5CCNAME`, else the default (renewed as Java renews it: kerberos_renewal.py).
- both: the ticket cache while it holds a ticket, else the keytab (Java's order).
- no `sasl.jaas.config`: the default ticket cache.

Which KDC serves a realm comes from MIT Kerberos' configuration: `/etc/krb5.conf`, or the file `KRB5_CONFIG`
names (Java's `-Djava.security.krb5.conf`). Keytab contents never reach a message; paths and principal
names do, because a user needs them to fix the setting.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_spark.errors import AuthenticationError, ConfigError, KafkaSparkError

if TYPE_CHECKING:
    from types import ModuleType

    import gssapi

    from kafka_spark.client.config import ClientConfig

INSTALL_HINT = ("pip install 'kafka-spark[kerberos]' (on Linux pip builds it against MIT Kerberos: "
                "apt-get install libkrb5-dev gcc, or your distribution's krb5 headers)")

# MIT Kerberos error codes (com_err table krb5, base -1765328384) as GSSAPI minor status, unsigned
_KRB5 = 2**32 - 1765328384
KDC_UNREACHABLE = _KRB5 + 156  # KRB5_KDC_UNREACH: "Cannot contact any KDC for realm"
REALM_UNKNOWN = _KRB5 + 154  # KRB5_REALM_UNKNOWN: "Cannot find KDC for realm" (none configured)
SERVER_UNKNOWN = _KRB5 + 7  # KDC_ERR_S_PRINCIPAL_UNKNOWN: "Server not found in Kerberos database"
CLIENT_UNKNOWN = _KRB5 + 6  # KDC_ERR_C_PRINCIPAL_UNKNOWN: "Client not found in Kerberos database"
PREAUTH_FAILED = _KRB5 + 24  # KDC_ERR_PREAUTH_FAILED: a keytab key the KDC no longer has
KEYTAB_NO_ENTRY = _KRB5 + 181  # KRB5_KT_NOTFOUND: "Key table entry not found"
_GSS_CREDENTIALS_EXPIRED = 11 << 16  # GSS_S_CREDENTIALS_EXPIRED (RFC 2744), a major status


def load_gssapi() -> ModuleType:
    """The `gssapi` binding, imported on first use so that other mechanisms never need it."""
    try:
        import gssapi
    except ImportError as exc:
        raise ConfigError(f"sasl.mechanism=GSSAPI needs the gssapi package ({exc}): {INSTALL_HINT}") from None
    return gssapi


def _flag(options: dict[str, str], name: str) -> bool:
    # Krb5LoginModule reads its flags with equalsIgnoreCase("true")
    return options.get(name, "false").strip().lower() == "true"


@dataclass(frozen=True)
class KerberosLogin:
    """Where a login's tickets come from: a keytab, a ticket cache, or both (cache first)."""

    principal: str | None
    keytab: str | None
    ticket_cache: bool
    cache_name: str | None

    @property
    def who(self) -> str:
        """The login as a message names it (never a secret: a principal and a path)."""
        principal = f"as principal {self.principal} " if self.principal else ""
        if self.keytab:
            return f"{principal}with keyTab {self.keytab}"
        return f"{principal}with ticket cache {self.cache_name or os.environ.get('KRB5CCNAME') or '(default)'}"


def kerberos_login(config: ClientConfig) -> KerberosLogin:
    """The login `sasl.jaas.config` asks for, checked without the network: a keytab must be a readable file
    and name its principal; a password prompt (neither keytab nor ticket cache) cannot be served."""
    options = config.jaas_options()
    if not config.sasl_jaas_config:
        return KerberosLogin(None, None, True, None)
    principal = options.get("principal", "").strip() or None
    use_keytab, use_cache = _flag(options, "useKeyTab"), _flag(options, "useTicketCache")
    cache_name = options.get("ticketCache", "").strip() or None
    if not use_keytab:
        if not use_cache:
            raise ConfigError("sasl.jaas.config: Krb5LoginModule needs useKeyTab=true with keyTab and principal, "
                              "or useTicketCache=true (tickets from kinit); a password prompt is not supported")
        return KerberosLogin(principal, None, True, cache_name)
    keytab = options.get("keyTab", "").strip()
    if not keytab:
        raise ConfigError("sasl.jaas.config: useKeyTab=true needs keyTab=\"/path/to/client.keytab\"")
    path = Path(keytab).expanduser()
    if not path.is_file():
        raise ConfigError(f"sasl.jaas.config: keyTab {keytab} does not exist or is not a file")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"sasl.jaas.config: keyTab {keytab} is not readable by this process")
    if principal is None:
        raise ConfigError("sasl.jaas.config: useKeyTab=true needs principal=\"client@REALM\" (the keytab entry "
                          "to log in as)")
    return KerberosLogin(principal, str(path.resolve()), use_cache, cache_name)


def gss_detail(exc: Exception) -> str:
    """MIT Kerberos' own words for a failure, on one line (they name principals and realms, never keys): the
    mechanism's (minor) message, which says what happened, else the generic GSSAPI one."""
    gen = getattr(exc, "gen_message", None)
    text = " ".join(str(gen() if callable(gen) else exc).split())
    minor = re.search(r"Minor \(\d+\): (.+)$", text)
    if minor and minor.group(1) != "Success" and "Unknown error" not in minor.group(1):
        return minor.group(1)
    major = re.search(r"Major \(\d+\): (.+?)(?:, Minor \(|$)", text)
    return major.group(1) if major else text


def minor_code(exc: Exception) -> int:
    return int(getattr(exc, "min_code", 0) or 0) & 0xFFFFFFFF


def _keytab_credentials(lib: ModuleType, login: KerberosLogin) -> gssapi.Credentials:
    assert login.keytab is not None and login.principal is not None
    # One in-memory cache per keytab and principal, shared by every connection of this process: one AS
    # exchange, not one per connection, and MIT refreshes it from the keytab before its ticket expires.
    digest = hashlib.sha256(f"{login.principal}\0{login.keytab}".encode()).hexdigest()[:16]
    store = {"client_keytab": login.keytab, "ccache": f"MEMORY:kafka-spark-{digest}"}
    name = lib.Name(login.principal, lib.NameType.kerberos_principal)
    try:
        return lib.Credentials(name=name, usage="initiate", store=store)
    except lib.exceptions.GSSError as exc:
        # MIT only says it found no ticket; whether the keytab lacks the principal, the library tells when
        # asked for acceptor credentials of that name from the same keytab (no KDC involved)
        try:
            lib.Credentials(name=name, usage="accept", store={"keytab": login.keytab})
        except lib.exceptions.GSSError:
            raise ConfigError(f"sasl.jaas.config: keyTab {login.keytab} has no key for principal "
                              f"{login.principal}") from None
        raise login_error(login, exc) from None


def _cache_credentials(lib: ModuleType, login: KerberosLogin) -> gssapi.Credentials:
    name = lib.Name(login.principal, lib.NameType.kerberos_principal) if login.principal else None
    store = {"ccache": login.cache_name} if login.cache_name else None
    creds = lib.Credentials(name=name, usage="initiate", store=store)
    # acquiring succeeds on an expired ticket; asking its lifetime is what fails (or says 0)
    if creds.lifetime is not None and creds.lifetime <= 0:
        raise lib.exceptions.ExpiredCredentialsError(_GSS_CREDENTIALS_EXPIRED, 0)
    return creds


def credentials(login: KerberosLogin) -> gssapi.Credentials:
    """Initiator credentials for one authentication (a ticket from the KDC may follow lazily, at the first
    context step)."""
    lib = load_gssapi()
    if login.ticket_cache:
        try:
            return _cache_credentials(lib, login)
        except lib.exceptions.GSSError as exc:
            if login.keytab is None:
                raise login_error(login, exc) from None
    return _keytab_credentials(lib, login)


def login_error(login: KerberosLogin, exc: Exception) -> KafkaSparkError:
    """A one-line error for a failed Kerberos login, naming the option to look at."""
    code, detail = minor_code(exc), gss_detail(exc)
    if code == KEYTAB_NO_ENTRY or "no key table entry" in detail.lower():
        return ConfigError(f"sasl.jaas.config: keyTab {login.keytab} has no key for principal "
                           f"{login.principal} ({detail})")
    if code in (KDC_UNREACHABLE, REALM_UNKNOWN):
        return AuthenticationError(f"GSSAPI login {login.who}: no KDC answered; check the realm's kdc in "
                                   f"krb5.conf (KRB5_CONFIG) ({detail})")
    if code == CLIENT_UNKNOWN:
        return AuthenticationError(f"GSSAPI login: the KDC does not know principal {login.principal} "
                                   f"(sasl.jaas.config principal) ({detail})")
    if code == PREAUTH_FAILED:
        return AuthenticationError(f"GSSAPI login {login.who}: the KDC refused the keytab's key; the keytab "
                                   f"is stale ({detail})")
    if login.keytab is None:
        return AuthenticationError(f"GSSAPI login {login.who} failed; run kinit (or set useKeyTab=true "
                                   f"with keyTab and principal in sasl.jaas.config) ({detail})")
    return AuthenticationError(f"GSSAPI login {login.who} failed ({detail})")


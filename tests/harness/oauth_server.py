"""An OAuth 2 / OpenID Connect server on 127.0.0.1 for OAUTHBEARER: navikt's mock-oauth2-server.

It issues RS256-signed JWTs for the client-credentials grant (any client id and secret is accepted: it has no
client registry) and serves their keys as JWKS, which Kafka's `OAuthBearerValidatorCallbackHandler` checks
tokens against. One issuer, `kafka`, is configured: its tokens carry `sub` = the client id, `aud` = the
audience brokers expect and `scope` = `kafka`, and live `token_expiry_s` seconds, so short-lived tokens and
their refresh can be tested. A request for scope `other-audience` gets a token for another audience (signed
and valid, yet refused by a broker that expects `audience`).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness.fetch import classpath
from kafka_spark.local.process import ServerProcess, free_port, java_argv

MAIN_CLASS = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
ISSUER = "kafka"
AUDIENCE = "kafka-broker"
SCOPE = "kafka"
OTHER_AUDIENCE_SCOPE = "other-audience"


def server_config(token_expiry_s: int, audience: str = AUDIENCE) -> dict[str, object]:
    """mock-oauth2-server's JSON_CONFIG: a Netty server (it serves requests in parallel) and the `kafka` issuer."""
    def mapping(param: str, match: str, aud: str) -> dict[str, object]:
        # with request mappings, `sub` and `aud` come from the mapping alone; the template takes the client id
        return {"requestParam": param, "match": match,
                "claims": {"sub": "${clientId}", "aud": [aud], "scope": SCOPE}}

    return {
        "interactiveLogin": False,
        "httpServer": "NettyWrapper",
        "tokenCallbacks": [{
            "issuerId": ISSUER,
            "tokenExpiry": token_expiry_s,
            # the first mapping that matches wins
            "requestMappings": [mapping("scope", OTHER_AUDIENCE_SCOPE, "someone-else"),
                                mapping("grant_type", "client_credentials", audience)],
        }],
    }


@dataclass
class OAuthServer:
    """One mock-oauth2-server process; `token_url`, `jwks_url` and `issuer_url` are what clients and brokers use."""

    data_dir: Path
    token_expiry_s: int = 3600
    port: int = 0
    heap: str = "256m"
    process: ServerProcess | None = None

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{ISSUER}{path}"

    @property
    def issuer_url(self) -> str:
        return self.url()

    @property
    def token_url(self) -> str:
        return self.url("/token")

    @property
    def jwks_url(self) -> str:
        return self.url("/jwks")

    @property
    def log_path(self) -> Path:
        return self.data_dir / "oauth-server.log"

    def start(self, timeout: float = 60.0) -> OAuthServer:
        """Start the server and wait until it serves its OpenID configuration."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        env = {**os.environ, "SERVER_HOSTNAME": "127.0.0.1", "SERVER_PORT": str(self.port),
               "JSON_CONFIG": json.dumps(server_config(self.token_expiry_s))}
        argv = java_argv(classpath("oauth"), MAIN_CLASS, [], heap=self.heap)
        self.process = ServerProcess("oauth-server", argv, self.log_path, env=env).start()
        self.process.wait_ready(self.ready, timeout)
        return self

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url("/.well-known/openid-configuration"), timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, grace: float = 10.0) -> None:
        if self.process:
            self.process.stop(grace)

    def __enter__(self) -> OAuthServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_oauth_server(data_dir: Path, token_expiry_s: int = 3600, timeout: float = 60.0) -> OAuthServer:
    """Start a mock-oauth2-server whose `kafka` issuer's tokens live `token_expiry_s` seconds."""
    return OAuthServer(data_dir, token_expiry_s).start(timeout)

"""SASL/OAUTHBEARER: the mechanism, login tokens refreshed before they expire, and where tokens come from (an OAuth
token endpoint with its own TLS, jwt-bearer assertions, cloud identities, a user's hook)."""

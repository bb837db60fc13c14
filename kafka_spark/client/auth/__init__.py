"""SASL authentication: the mechanism interface (mechanism.py), the choice of login a configuration asks for under
the Java client's names (login.py), and one module or folder per mechanism: PLAIN and SCRAM (plain_scram.py),
OAUTHBEARER with its token sources (oauth/), GSSAPI with its Kerberos credentials (gssapi/)."""

"""SASL/GSSAPI (Kerberos): the mechanism through the `gssapi` binding, the login's credentials from a keytab or a
ticket cache, and the renewal of a `kinit` cache as Java's client renews it."""

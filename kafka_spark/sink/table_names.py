"""Table names and paths: telling a catalog name from a path, whatever the table format.

The rule: a table is a catalog name when it is two or three dot-separated identifiers — `db.table` or
`catalog.db.table` — with no scheme and no '/'. An identifier is letters, digits and underscores (not
starting with a digit), or any text but '/' and '`' in backticks (`` `my-db`.orders ``). Everything else
is a path: `orders`, `./db.orders` (a relative directory that looks like a name), `/lake/orders`,
`file:/lake/orders`, `s3a://lake/orders`.
"""

from __future__ import annotations

import re

_IDENTIFIER = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`/]+`)"
_NAME = re.compile(rf"^{_IDENTIFIER}(?:\.{_IDENTIFIER}){{1,2}}$")


def is_table_name(table: str) -> bool:
    """Whether `table` names a catalog table (`db.table`, `catalog.db.table`) rather than a path."""
    return bool(_NAME.match(table.strip()))


def name_parts(name: str) -> list[str]:
    """The identifiers of a catalog name (`is_table_name`), backticks removed: `a.`b-c`` -> ['a', 'b-c']."""
    return [part.strip("`") for part in re.findall(rf"{_IDENTIFIER}", name.strip())]

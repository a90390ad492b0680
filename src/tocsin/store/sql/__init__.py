"""Every SQL statement of the store, read once at import from the named blocks beside this file.

`shared.sql` holds the statements both backends run with the same text, written with named
placeholders (`:owner`); `postgres.sql` and `sqlite.sql` hold those whose dialect differs,
each in its driver's own placeholders. A block is a line `-- name: NAME`, the comment lines
that say what the statement does, then its text, up to the next block (comment lines after a
statement belong to the file, not to it). A name that starts with `_` is a template that the
backend's `queries` module fills in (`{slot}`), once, at import; a few statements have slots
too, among them the reads of the scheduler's batches by field name (`{claim_fields}`,
`{claim.due_at}`), made from their declaration in `store/batches.py`.

Rendered for sqlite3, a shared statement is its text as written (parameters by name, a dict);
for asyncpg, whose placeholders are `$1, $2 …`, each name becomes `$n` in the order of its
first appearance, and the `Statement` keeps the names, so that the PostgreSQL store passes its
arguments by name (`Statement.bind`). Nothing is parsed or built per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

_NAME = re.compile(r"^-- name: ([A-Z_][A-Z0-9_]*)[ \t]*$", re.MULTILINE)
# What a placeholder may stand next to without being one: string literals, comments, casts.
_TOKEN = re.compile(r"'(?:[^']|'')*'|--[^\n]*|::|:([a-z_][a-z0-9_]*)")


def parse(text: str) -> dict[str, str]:
    """The statements of one `.sql` file by name, each without its description."""
    pieces = _NAME.split(text)
    blocks: dict[str, str] = {}
    for name, body in zip(pieces[1::2], pieces[2::2], strict=True):
        lines = body.strip("\n").splitlines()
        while lines and lines[0].startswith("--"):
            lines.pop(0)
        while lines and (not lines[-1].strip() or lines[-1].startswith("--")):
            lines.pop()
        if not lines:
            raise ValueError(f"the block {name} holds no statement")
        if name in blocks:
            raise ValueError(f"two blocks are named {name}")
        blocks[name] = "\n".join(lines)
    return blocks


def _read(file: str) -> dict[str, str]:
    return parse(files(__name__).joinpath(file).read_text(encoding="utf-8"))


@dataclass(frozen=True, slots=True)
class Statement:
    """A shared statement rendered for asyncpg: `sql` with `$n` where `names[n - 1]` was."""

    sql: str
    names: tuple[str, ...]

    def bind(self, **values: Any) -> tuple[Any, ...]:
        """The statement and its arguments in placeholder order (`fetch(*s.bind(owner=…))`),
        given by the names the `.sql` file uses, every one of them and no other."""
        if len(values) != len(self.names):
            raise TypeError(f"the statement takes {self.names}, not {tuple(values)}")
        return (self.sql, *[values[name] for name in self.names])


def positional(text: str) -> Statement:
    """`text` with each `:name` replaced by `$n`, in the order of first appearance."""
    names: list[str] = []

    def place(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return Statement(sql=_TOKEN.sub(place, text), names=tuple(names))


class Statements:
    """Shared statements by name, as attributes (`shared.GET_CONTACT`), set once."""

    def __init__(self, statements: dict[str, Statement]) -> None:
        self.__dict__.update(statements)

    def __getattr__(self, name: str) -> Statement:
        raise AttributeError(f"no shared statement is named {name}")


SHARED = _read("shared.sql")
# Every statement SQLite runs: its own and the shared ones as written.
SQLITE = _read("sqlite.sql")
POSTGRES = _read("postgres.sql")
# The shared statements as asyncpg takes them.
POSTGRES_SHARED = {name: positional(text) for name, text in SHARED.items()}

for _backend in (SQLITE, POSTGRES):
    _twice = _backend.keys() & SHARED.keys()
    if _twice:
        raise ValueError(f"written in shared.sql and a backend's file: {sorted(_twice)}")
SQLITE |= SHARED
POSTGRES |= {name: statement.sql for name, statement in POSTGRES_SHARED.items()}

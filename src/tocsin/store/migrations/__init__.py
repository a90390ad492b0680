"""Versioned schema migrations: one folder of numbered SQL files per backend.

A migration is `NNNN_what_it_does.sql` in `migrations/<backend>/`. Each backend's runner
applies the ones the database lacks, in order, each in its own transaction, and records it in
`schema_migrations`. `schema.sql` beside them is the snapshot of the resulting schema, which a
test compares with a freshly migrated database (docs/storage.md says how to regenerate it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources

from tocsin.errors import SchemaTooNew, SchemaTooOld

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations_for(backend: str) -> list[Migration]:
    """Every migration of `backend` (`sqlite` or `postgres`), oldest first."""
    found: list[Migration] = []
    for entry in resources.files(__package__).joinpath(backend).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(
                Migration(
                    version=int(match[1]), name=match[2], sql=entry.read_text(encoding="utf-8")
                )
            )
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"{backend} migrations must be numbered 1, 2, 3 …: {versions}")
    return found


def latest_version(backend: str) -> int:
    return len(migrations_for(backend))


def check_applied(known: Sequence[Migration], applied: Collection[int]) -> None:
    """Raise `SchemaTooNew` when the database records a migration not among the `known` ones,
    `SchemaTooOld` when it lacks one of them."""
    refuse_newer(known, applied)
    missing = sorted({migration.version for migration in known} - set(applied))
    if missing:
        raise SchemaTooOld(f"the database lacks migrations {missing}: run `tocsin migrate`")


def refuse_newer(known: Sequence[Migration], applied: Collection[int]) -> None:
    """Raise `SchemaTooNew` when the database records a migration not among the `known` ones
    (a newer version ran there): migrating or running on it could damage what it keeps."""
    latest = max((migration.version for migration in known), default=0)
    unknown = sorted(version for version in applied if version > latest)
    if unknown:
        raise SchemaTooNew(
            f"the database has migrations {unknown} that this version of Tocsin does not "
            f"know (it knows 1 to {latest}): a newer version migrated it"
        )


def sqlite_statements(script: str) -> list[str]:
    """Split an SQLite script into statements (executescript would commit on its own)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip() and not _only_comments(pending):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {pending!r}")
    return statements


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())

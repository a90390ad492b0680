"""Versioned schema migrations: one folder of numbered SQL files per backend.

A migration is `NNNN_what_it_does.sql` in `migrations/<backend>/`. Each backend's runner
applies the ones the database lacks, in order, each in its own transaction, and records it in
`schema_migrations`. `schema.sql` beside them is the snapshot of the resulting schema, which a
test compares with a freshly migrated database (docs/storage.md says how to regenerate it).

A PostgreSQL migration that changes a large table with the service running is written in
steps, each opened by a line `-- step: <how>` (`Step`), which the runner applies one after the
other, recording each as it ends, so that a run stopped half way goes on where it stopped. A
migration whose first line is `-- applies: after the upgrade` would stop the previous
release's processes (it drops what they read): `tocsin migrate --before-upgrade` leaves it for
the run after them, and the new release runs with it still to apply (docs/operations.md,
"Upgrades").
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources

from tocsin.errors import SchemaTooNew, SchemaTooOld

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_STEP = re.compile(r"^-- step: (.+)$", re.MULTILINE)
_BATCHES = re.compile(r"^in batches (?:of at most (\d+) pages )?over ([a-z_]+)$")
AFTER_THE_UPGRADE = "-- applies: after the upgrade"
BATCH_PAGES = 256  # pages a batch changes (2 MiB): tens of thousands of rows, well under a second
ONE_TRANSACTION = "in one transaction"
OUTSIDE_A_TRANSACTION = "outside a transaction"


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    """One step of a migration, in one of three ways:

    - `in one transaction`: its statements at once, all or nothing;
    - `in batches over <table>`: its statements again and again, each time together in a
      transaction of its own (tried again when a lock it waited for timed out), those that
      take parameters given `$1` and `$2`, a range of the table's pages (the first and the one
      after the last: `ctid >= format('(%s,0)', $1)::tid`, a TID range scan), until they have
      been given every page the table had when the step began. Pages added later hold only
      rows written meanwhile, which the migration's earlier steps keep right themselves.
      `in batches of at most N pages over <table>` caps a batch's pages below the run's
      (`--batch-pages`), for a batch that holds the table's writes off while it runs;
    - `outside a transaction`: its statements one at a time, each its own (what
      `CONCURRENTLY` needs), each safe to run again: a step stopped half way runs whole again.
    """

    how: str
    sql: str
    table: str | None = None
    most_pages: int | None = None  # a batch's pages at most (`in batches of at most N pages`)

    def statements(self) -> list[str]:
        """Its statements, for a step that runs them one by one (in batches, or outside a
        transaction): each ends with `;` at a line's end, and none has a body of its own
        (`$$`) in which such a line could hide."""
        if "$$" in self.sql:
            raise ValueError(f"a step {self.how} takes no $$ body: {self.sql!r}")
        found = [s.strip() for s in re.split(r";[ \t]*$", self.sql, flags=re.MULTILINE)]
        return [s for s in found if s and not _only_comments(s)]


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def after_upgrade(self) -> bool:
        """Whether it would stop the previous release's processes, so waits for them to go."""
        return self.sql.startswith(AFTER_THE_UPGRADE)

    def steps(self) -> list[Step]:
        """Its steps: the whole of it in one transaction, unless it is written in steps."""
        marks = list(_STEP.finditer(self.sql))
        if not marks:
            return [Step(how=ONE_TRANSACTION, sql=self.sql)]
        if not _only_comments(self.sql[: marks[0].start()]):
            raise ValueError(f"migration {self.version}: a statement before its first step")
        steps: list[Step] = []
        for mark, after in zip(marks, [*marks[1:], None], strict=True):
            body = self.sql[mark.end() : after.start() if after else len(self.sql)]
            how = mark[1].strip()
            batches = _BATCHES.match(how)
            if how not in (ONE_TRANSACTION, OUTSIDE_A_TRANSACTION) and not batches:
                raise ValueError(f"migration {self.version}: no step is {how!r}")
            steps.append(
                Step(
                    how=how,
                    sql=body.strip(),
                    table=batches[2] if batches else None,
                    most_pages=int(batches[1]) if batches and batches[1] else None,
                )
            )
        return steps


@dataclass(frozen=True, kw_only=True, slots=True)
class MigrationState:
    """A known migration in a database: applied, or how far it has gone (`tocsin migrate
    --status`): its steps ended and, when the next is in batches, the next of its pages."""

    migration: Migration
    applied: bool
    steps_ended: int = 0
    next_page: int | None = None
    pages: int | None = None
    rows_left: int | None = None  # about, from the table's statistics


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
    `SchemaTooOld` when it lacks one of them that this code needs (one that applies after the
    upgrade it runs with or without)."""
    refuse_newer(known, applied)
    missing = sorted(
        migration.version
        for migration in known
        if migration.version not in applied and not migration.after_upgrade
    )
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

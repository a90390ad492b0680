"""Errors shared by every layer; the API turns each into an RFC 9457 problem."""

from __future__ import annotations

import logging


class TocsinError(Exception):
    """Base of every error Tocsin raises on purpose."""


class InvalidInput(TocsinError):
    """Input that cannot be accepted; `field` names where it is (`repeat`, `items.3.zone`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class StoreError(TocsinError):
    """A database failure, wrapped once at the storage boundary (the cause is the driver's)."""


class StoreUnavailable(StoreError):
    """The database cannot be reached right now; the operation may be retried."""


class DatabaseDown(StoreUnavailable):
    """No connection to the database could be made. The store logs that itself, once per
    change (when it starts, every 30 s while it lasts, when it ends), so that a caller
    retrying every second need not repeat it in the log."""


def level_for(error: StoreError) -> int:
    """The level to log a failed store call at, for a caller that retries it: DEBUG when the
    store has said so itself (`DatabaseDown`), WARNING otherwise."""
    return logging.DEBUG if isinstance(error, DatabaseDown) else logging.WARNING


class DatabaseReadOnly(StoreUnavailable):
    """The database server answers but takes no writes: it is a standby (after a failover or
    a switchover moved the primary elsewhere) or was set read-only. Nothing is written, so
    nothing is claimed; connections are made again to find the primary."""


class SchemaTooOld(StoreError):
    """The database schema is older than this code needs: run `tocsin migrate`."""


class SchemaTooNew(StoreError):
    """The database has migrations this code does not know: a newer version migrated it.
    Running older code on it could misread or damage what the newer schema keeps."""


class DuplicateIdempotencyKey(StoreError):
    """Another request saved the same idempotency key first; read its answer instead."""


class CapReached(StoreError):
    """A reminder was not saved: its owner keeps as many pending reminders from its app as
    the cap allows (`Store.add_reminders`)."""

    def __init__(self, owner: str, source: str | None) -> None:
        super().__init__(f"{owner} keeps the most pending reminders allowed from {source}")
        self.owner = owner
        self.source = source


class ListGone(StoreError):
    """A list's reminder was not saved: its list was deleted first (`Store.add_reminders`,
    `Store.snooze_firing`)."""

    def __init__(self, list_id: str) -> None:
        super().__init__(f"list {list_id} was deleted")
        self.list_id = list_id


class ListKeptRinging(StoreError):
    """A list was not deleted: claims kept deciding one of its reminders' occurrences first
    while the delete took them back (`Store.delete_list`); nothing was deleted."""


class SecretKeyError(TocsinError):
    """The secret key (`TOCSIN_SECRET_KEY`) is missing or malformed, or does not open a
    secret stored in the database. Messages name the setting and the key id, never a key
    or a secret."""


class SecretKeyMissing(SecretKeyError):
    """A process that reads or writes stored secrets has no secret key."""


class SecretUnreadable(SecretKeyError):
    """A stored secret that no key of the ring opens: sealed with a key the ring no longer
    holds, or changed in the database (its authentication tag does not match)."""


class ExpansionBudgetExceeded(TocsinError):
    """Working out a schedule's rings needed more CPU time than its budget allowed.

    Raised by `tocsin.time` (`plan_schedule`, `first_due`, `next_after`, `occurrences`) while
    dateutil walks the rule, so no single rule can hold a process for longer than its budget
    (`tocsin.time.budget`). A rule that rings rarely but has to be walked minute by minute
    (`FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=23;BYMINUTE=59`) is the usual cause.

    The API refuses such a rule with a 422 naming the field. The scheduler, which calls
    `next_after` on the claim path, should record that one reminder as failed (the rule cannot
    be followed) and carry on with the others: retrying would spend the same budget again.
    It is not an `InvalidInput`: which field is at fault depends on the caller (`repeat` for a
    new rule, `count` for a long preview of a saved one).
    """

    def __init__(self, seconds: float, what: str) -> None:
        super().__init__(
            f"{what} needed more than {seconds:g} s of CPU time (the budget for expanding it)"
        )
        self.seconds = seconds
        self.what = what

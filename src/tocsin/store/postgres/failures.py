"""Driver and network errors turned into Tocsin's, once, at the PostgreSQL backend's edge."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from tocsin.errors import (
    DatabaseReadOnly,
    DuplicateIdempotencyKey,
    StoreError,
    StoreUnavailable,
    TocsinError,
)

UNAVAILABLE_STATES = {"57P01", "57P02", "57P03", "53300"}  # shutdown, crash, starting, full
READ_ONLY_STATE = "25006"  # read_only_sql_transaction: the server is (now) a standby
_CLOSED = "connection is closed"  # asyncpg's InterfaceError on a connection already lost

DRIVER_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)


def translate(error: BaseException) -> StoreError:
    """The Tocsin error for a driver or network error (raise it `from` the original)."""
    if isinstance(error, asyncpg.PostgresError):
        state = getattr(error, "sqlstate", None) or ""
        if state == READ_ONLY_STATE:
            return DatabaseReadOnly(f"PostgreSQL is read-only (a standby now?): {error}")
        if isinstance(error, asyncpg.PostgresConnectionError) or state in UNAVAILABLE_STATES:
            return StoreUnavailable(f"PostgreSQL unavailable: {error}")
        return StoreError(f"PostgreSQL: {error}")
    if isinstance(error, OSError | TimeoutError | asyncpg.InternalClientError):
        # InternalClientError: a connection the server dropped mid-conversation, or no host
        # of a multi-host URL that is writable (TargetServerAttributeNotMatched: a failover
        # is under way).
        return StoreUnavailable(f"PostgreSQL unreachable: {error!r}")
    if isinstance(error, asyncpg.InterfaceError) and _CLOSED in str(error):
        # A pooled connection whose server went away between two statements.
        return StoreUnavailable(f"PostgreSQL unreachable: {error}")
    return StoreError(f"PostgreSQL client: {error}")


@contextmanager
def boundary() -> Iterator[None]:
    """Wrap driver errors raised inside, once, as Tocsin errors."""
    try:
        yield
    except TocsinError:
        raise
    except asyncpg.UniqueViolationError as error:
        if error.constraint_name == "idempotency_keys_pkey":
            raise DuplicateIdempotencyKey("the idempotency key was used already") from error
        raise translate(error) from error
    except DRIVER_ERRORS as error:
        raise translate(error) from error

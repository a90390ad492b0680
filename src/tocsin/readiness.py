"""Readiness, asked by load balancers and orchestrators of the API (`/readyz`) and of a
worker (its metrics port): can this process do its work now?"""

from __future__ import annotations

import asyncio

from tocsin.errors import DatabaseReadOnly, SchemaTooOld, StoreError
from tocsin.store.base import Store

TIMEOUT_SECONDS = 2.0


async def database_problem(store: Store) -> str | None:
    """Why the database is not fit to work on (it does not answer in time, it answers but is
    a read-only standby, or its schema is not the one this code needs, as after a `tocsin
    migrate` of a newer version), or None."""
    try:
        await asyncio.wait_for(store.check_schema(), TIMEOUT_SECONDS)
    except DatabaseReadOnly:
        return "the database is read-only (a standby, not the primary): nothing is claimed"
    except SchemaTooOld as error:
        return f"the database schema is not current: {error}"
    except (StoreError, TimeoutError):
        return "the database does not answer"
    return None

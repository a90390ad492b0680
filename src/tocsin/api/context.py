"""What every route needs, made once per app: the store, the clock, the caller's identity.

Both dependencies are `async def` and read the request alone: FastAPI runs a plain `def`
dependency in a worker thread, a thread hop per request that cost a tenth of a create.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request

from tocsin.api.arrivals import ArrivalService
from tocsin.api.contacts import ContactService
from tocsin.api.feed import Feed
from tocsin.api.limits import RateLimits, too_many
from tocsin.api.lists import ListService
from tocsin.api.places import PlaceService
from tocsin.api.problems import Problem
from tocsin.api.quiet import QuietHoursService
from tocsin.api.security import Authenticator, Principal
from tocsin.api.service import ReminderService
from tocsin.clock import Clock
from tocsin.settings import Settings
from tocsin.store import Store


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiContext:
    store: Store
    settings: Settings
    clock: Clock
    auth: Authenticator
    reminders: ReminderService
    limits: RateLimits
    contacts: ContactService
    places: PlaceService
    arrivals: ArrivalService
    quiet_hours: QuietHoursService
    lists: ListService
    feed: Feed


async def get_context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.tocsin
    return context


Context = Annotated[ApiContext, Depends(get_context)]


async def get_principal(request: Request) -> Principal:
    """The caller, from `Authorization` (read from the headers as is: it is not part of the
    documented parameters, and a declared header would be validated on every request)."""
    context: ApiContext = request.app.state.tocsin
    authorization = request.headers.get("authorization")
    return await _admit(request, context, lambda: context.auth.authenticate(authorization))


Caller = Annotated[Principal, Depends(get_principal)]


async def get_feed_principal(
    request: Request,
    ticket: Annotated[
        str | None,
        Query(
            max_length=300,
            description="A feed ticket (`POST …/feed/tickets`), for a page's `EventSource`, "
            "which cannot send `Authorization`.",
        ),
    ] = None,
) -> Principal:
    """The caller of the feed: from a `ticket` in the query when there is one, else as
    `get_principal` (limited and counted the same way)."""
    if ticket is None:
        return await get_principal(request)
    context: ApiContext = request.app.state.tocsin
    return await _admit(request, context, lambda: context.auth.authenticate_ticket(ticket))


FeedCaller = Annotated[Principal, Depends(get_feed_principal)]


async def _admit(
    request: Request, context: ApiContext, authenticate: Callable[[], Awaitable[Principal]]
) -> Principal:
    """The principal `authenticate` finds, within the rate limits: failed authentications
    per client address (checked before it runs), requests per key or owner."""
    limits = context.limits
    address = request.client.host if request.client is not None else "-"
    wait = limits.failures.peek(address)
    if wait:
        raise too_many(wait, f"{address}: too many failed authentications")
    try:
        principal = await authenticate()
    except Problem as refused:
        if refused.status == 401:
            limits.failures.take(address)
        raise
    request.state.principal = principal.scope
    buckets = limits.owners if principal.owner is not None else limits.keys
    if principal.source is not None or principal.owner is not None:
        wait = buckets.take(principal.scope)
        if wait:
            raise too_many(wait, buckets.what)
    return principal

"""`GET /v1/owners/{owner}/feed`: the in-app channel, as server-sent events; and the short
tickets that let a page's `EventSource` (which cannot send headers) open it."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path
from starlette.responses import Response

from tocsin.api import openapi, render
from tocsin.api.context import Caller, Context, FeedCaller
from tocsin.api.models import OWNER_PATTERN, FeedTicketOut
from tocsin.api.problems import Problem
from tocsin.api.sse import MEDIA_TYPE, EventStream
from tocsin.time import format_utc

# Errors are problem+json (`openapi.problems` names the schema under that type: through
# `model`, FastAPI would put it under the route's `text/event-stream`).
_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events, one per ring: `id` is the firing's delivery "
        "identity, `data` its JSON (`id`, `reminder_id`, `owner`, `text`, `due`, "
        "`deadline`, `metadata`); a comment line when idle (heartbeat).",
        "content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
    },
    **openapi.problems(
        *openapi.AUTHENTICATED,
        422,
        notes={
            403: "In loopback dev mode, a read from another origin (it takes the waiting rings).",
            404: "No such owner (for this token)",
            429: "Over a rate limit, or the owner holds as many feed connections on this "
            "server process as it allows (`too-many-feed-connections`).",
        },
    ),
}

router = APIRouter(prefix="/v1/owners/{owner}/feed", tags=["feed"])

Owner = Annotated[str, Path(pattern=OWNER_PATTERN)]


@router.get(
    "",
    status_code=200,
    response_class=EventStream,
    responses=_RESPONSES,
    operation_id="ownerFeed",
    summary="The owner's rings as they happen (server-sent events)",
)
async def feed(
    owner: Owner,
    context: Context,
    caller: FeedCaller,
    last_event_id: Annotated[str | None, Header(max_length=200)] = None,
) -> Response:
    if not caller.may_see(owner):
        raise Problem(404, "not-found", f"no owner {owner} for this token")
    hub = context.feed
    subscription = await hub.open(owner, caller)
    try:  # read before answering, so that a database away is a 503, not a broken stream
        waiting = await hub.waiting(subscription, after=last_event_id)
    except BaseException:
        hub.leave(subscription)
        raise
    return EventStream(
        functools.partial(hub.serve, subscription, waiting), on_disconnect=subscription.close
    )


@router.post(
    "/tickets",
    status_code=201,
    response_model=FeedTicketOut,
    responses=openapi.problems(
        *openapi.AUTHENTICATED,
        422,
        notes={
            403: "An app key (apps read the feed with their `Authorization` header), or, in "
            "loopback dev mode, a write from another origin.",
            404: "No such owner (for this token)",
        },
    ),
    operation_id="createFeedTicket",
    summary="A ticket that opens the owner's feed for a minute (for a page's EventSource)",
)
async def feed_ticket(owner: Owner, context: Context, caller: Caller) -> Response:
    if not caller.may_see(owner):
        raise Problem(404, "not-found", f"no owner {owner} for this token")
    if caller.tenant is not None:
        # A ticket carries no tenant: it would open every app's rings of this owner.
        raise Problem(
            403,
            "forbidden",
            "feed tickets are for a person's page (an owner token); an app key reads the "
            "feed with its Authorization header",
        )
    ticket, expires = await context.auth.feed_ticket(owner, caller=caller)
    return render.JSON({"ticket": ticket, "expires": format_utc(expires)}, status_code=201)

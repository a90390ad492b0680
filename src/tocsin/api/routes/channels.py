"""`/v1/channels`: the channels this server rings (a reminder on any other is refused,
`tocsin.api.routing.check_configured`); `/v1/owners/{owner}/channels`: which of them can
deliver a ring for that owner now (`tocsin.api.reach`), so that a client offers only those."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.responses import Response

from tocsin.api import openapi
from tocsin.api.context import Caller, Context
from tocsin.api.models import OWNER_PATTERN, ChannelsOut, OwnerChannelsOut
from tocsin.api.render import JSON
from tocsin.domain import Channel

router = APIRouter(
    prefix="/v1", tags=["reminders"], responses=openapi.problems(*openapi.AUTHENTICATED)
)


@router.get(
    "/channels",
    response_model=ChannelsOut,
    summary="The channels a reminder may ring by on this server",
    operation_id="listChannels",
)
async def list_channels(context: Context, caller: Caller) -> Response:
    configured = context.reminders.configured
    return JSON({"channels": [channel.value for channel in Channel if channel in configured]})


@router.get(
    "/owners/{owner}/channels",
    response_model=OwnerChannelsOut,
    summary="Which channels can deliver a ring for this owner now",
    description="Every channel, with whether a reminder the caller saves for `owner` on it "
    "would reach somewhere now (`ready`) and, when not, why (`reason`): not configured here, "
    "no contact of its kind the caller's app may ring, no webhook URL. A create or edit on a "
    "channel that is not ready is saved with the same reason in its `warnings`.",
    operation_id="listOwnerChannels",
    responses=openapi.problems(
        422, notes={404: "An owner token's other owner.", 422: "Not an owner name."}
    ),
)
async def list_owner_channels(
    owner: Annotated[str, Path(pattern=OWNER_PATTERN)], context: Context, caller: Caller
) -> Response:
    found = await context.reminders.channels_for(caller, owner)
    return JSON({"owner": owner, "channels": found})

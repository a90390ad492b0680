"""`/v1/channels`: the channels this server rings, so that a client offers only those (a
reminder on any other is refused, `tocsin.api.routing.check_configured`)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from tocsin.api import openapi
from tocsin.api.context import Caller, Context
from tocsin.api.models import ChannelsOut
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

"""`/v1/owners/{owner}/quiet-hours`: the span of an owner's day in which his bulk rings wait."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.responses import Response

from tocsin.api import openapi, render
from tocsin.api.context import Caller, Context
from tocsin.api.models import OWNER_PATTERN, QuietHoursIn, QuietHoursListOut, QuietHoursOut

_NOT_FOUND = {404: "No quiet hours saved with this token, or an owner token's other owner."}

router = APIRouter(
    prefix="/v1/owners/{owner}/quiet-hours",
    tags=["quiet hours"],
    responses=openapi.problems(*openapi.AUTHENTICATED, 422, notes=_NOT_FOUND),
)

Owner = Annotated[str, Path(pattern=OWNER_PATTERN)]


@router.get(
    "",
    response_model=QuietHoursListOut,
    summary="An owner's quiet hours",
    description="The quiet hours the caller may see: an app key those it saved, an owner token "
    "every saver's (his own and each app's), an admin key all. Each says when the span that "
    "holds now ends (`quiet_until`).",
    operation_id="listQuietHours",
)
async def list_quiet_hours(owner: Owner, context: Context, caller: Caller) -> Response:
    spans = await context.quiet_hours.list(caller, owner)
    now = context.clock.now()
    return render.JSON({"quiet_hours": [render.quiet_hours(span, now) for span in spans]})


@router.put(
    "",
    response_model=QuietHoursOut,
    summary="Set the caller's quiet hours for an owner",
    description="Bulk rings due inside the span wait until it ends, and expire if they would go "
    "stale first; urgent rings go through. An app key's quiet hours hold the rings of its own "
    "reminders; the owner's own (his token, or an admin key) hold every ring of his. Setting "
    "them again replaces the caller's own.",
    operation_id="setQuietHours",
    responses=openapi.problems(*openapi.WITH_BODY),
)
async def set_quiet_hours(
    owner: Owner, item: QuietHoursIn, context: Context, caller: Caller
) -> Response:
    saved = await context.quiet_hours.set(caller, owner, item)
    return render.JSON(render.quiet_hours(saved, context.clock.now()))


@router.delete(
    "",
    status_code=204,
    summary="Clear the caller's quiet hours for an owner",
    operation_id="clearQuietHours",
)
async def clear_quiet_hours(owner: Owner, context: Context, caller: Caller) -> Response:
    await context.quiet_hours.clear(caller, owner)
    return Response(status_code=204)

"""`/v1/owners/{owner}/places…`: an owner's geofences ("home", "the office")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from starlette.responses import Response

from tocsin.api import openapi, render
from tocsin.api.context import Caller, Context
from tocsin.api.models import (
    OWNER_PATTERN,
    CrossingIn,
    CrossingOut,
    PlaceIn,
    PlaceListOut,
    PlaceOut,
    PlacePatch,
)

_NOT_FOUND = {404: "No such place, or an owner token's other owner."}

router = APIRouter(
    prefix="/v1/owners/{owner}/places",
    tags=["places"],
    responses=openapi.problems(*openapi.AUTHENTICATED, 422, notes=_NOT_FOUND),
)

Owner = Annotated[str, Path(pattern=OWNER_PATTERN)]


@router.post(
    "",
    status_code=201,
    response_model=PlaceOut,
    summary="Add a place",
    operation_id="createPlace",
    responses={
        201: {"headers": openapi.CREATED_HEADERS, "links": openapi.PLACE_LINKS},
        **openapi.problems(*openapi.WITH_BODY),
    },
)
async def create_place(owner: Owner, item: PlaceIn, context: Context, caller: Caller) -> Response:
    saved = await context.places.add(caller, owner, item)
    return render.JSON(
        render.place(saved),
        status_code=201,
        headers={"Location": f"/v1/owners/{owner}/places/{saved.id}"},
    )


@router.get(
    "",
    response_model=PlaceListOut,
    summary="An owner's places, or the nearest to a point",
    description="Without `near`, one page of the owner's places in the order they were saved. "
    "With `near=lat,lon` (degrees), the `limit` places nearest to that point, nearest first, "
    "each with its `distance_m` to the place's edge: the geofences a device there should "
    "watch (iOS lets an app watch 20 regions, Android 100).",
    operation_id="listPlaces",
)
async def list_places(
    owner: Owner,
    context: Context,
    caller: Caller,
    near: Annotated[str | None, Query(max_length=100, examples=["52.52,13.405"])] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    if near is not None:
        nearest = await context.places.nearest(caller, owner, near, limit=limit)
        places = [render.place(place, distance_m=distance) for place, distance in nearest]
        return render.JSON({"places": places, "next_cursor": None})
    page, next_cursor = await context.places.list_page(caller, owner, limit=limit, cursor=cursor)
    return render.JSON({"places": [render.place(p) for p in page], "next_cursor": next_cursor})


@router.get("/{place_id}", response_model=PlaceOut, summary="One place", operation_id="getPlace")
async def get_place(owner: Owner, place_id: str, context: Context, caller: Caller) -> Response:
    return render.JSON(render.place(await context.places.get(caller, owner, place_id)))


@router.patch(
    "/{place_id}",
    response_model=PlaceOut,
    summary="Change a place",
    operation_id="changePlace",
    responses=openapi.problems(*openapi.WITH_BODY),
)
async def change_place(
    owner: Owner, place_id: str, patch: PlacePatch, context: Context, caller: Caller
) -> Response:
    saved = await context.places.change(caller, owner, place_id, patch)
    return render.JSON(render.place(saved))


@router.delete(
    "/{place_id}",
    status_code=204,
    summary="Delete a place",
    description="A place at which pending reminders ring is not deleted (409 `place-in-use`, "
    "naming some of them in `reminders`): cancel them first.",
    operation_id="deletePlace",
    responses=openapi.problems(notes={409: "Pending reminders ring at it (`reminders`)."}),
)
async def delete_place(owner: Owner, place_id: str, context: Context, caller: Caller) -> Response:
    await context.places.delete(caller, owner, place_id)
    return Response(status_code=204)


@router.post(
    "/{place_id}/events",
    response_model=CrossingOut,
    summary="Report a crossing of a place",
    description="The owner's device reports that it arrived at the place or left it, at its own "
    "time (`at`). The place's reminders of that event ring now, through the delivery queue, "
    "each inside its local window and within its `once`: the answer names each firing made "
    "(`rang`) and why each other reminder did not ring (`passed`). A repeat of a crossing "
    "that rang (the same report sent again, or the geofence flapping within 5 minutes) rings "
    "nothing; a crossing more than 15 minutes old is refused (422 naming `at`).",
    operation_id="reportCrossing",
    responses=openapi.problems(*openapi.WITH_BODY),
)
async def report_crossing(
    owner: Owner, place_id: str, body: CrossingIn, context: Context, caller: Caller
) -> Response:
    return render.JSON(await context.arrivals.crossing(caller, owner, place_id, body))

"""`/v1/owners/{owner}/contacts…`: where an owner's rings go."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from starlette.responses import Response

from tocsin.api import openapi, render
from tocsin.api.context import Caller, Context
from tocsin.api.models import (
    OWNER_PATTERN,
    ContactIn,
    ContactListOut,
    ContactOut,
    ContactPatch,
)
from tocsin.domain import Channel

_NOT_FOUND = {404: "No such contact, or an owner token's other owner."}

# Every contact route can answer 404 (an owner token sees its own owner only) and 422 (an
# `owner` in the path that is not an owner name).
router = APIRouter(
    prefix="/v1/owners/{owner}/contacts",
    tags=["contacts"],
    responses=openapi.problems(*openapi.AUTHENTICATED, 422, notes=_NOT_FOUND),
)

Owner = Annotated[str, Path(pattern=OWNER_PATTERN)]


@router.post(
    "",
    status_code=201,
    response_model=ContactOut,
    summary="Add a contact",
    operation_id="createContact",
    responses={
        201: {"headers": openapi.CREATED_HEADERS, "links": openapi.CONTACT_LINKS},
        **openapi.problems(*openapi.WITH_BODY),
    },
)
async def create_contact(
    owner: Owner, item: ContactIn, context: Context, caller: Caller
) -> Response:
    saved = await context.contacts.add(caller, owner, item)
    return render.JSON(
        render.contact(saved, secret=True),
        status_code=201,
        headers={"Location": f"/v1/owners/{owner}/contacts/{saved.id}"},
    )


@router.get(
    "",
    response_model=ContactListOut,
    summary="One page of an owner's contacts",
    operation_id="listContacts",
)
async def list_contacts(
    owner: Owner,
    context: Context,
    caller: Caller,
    kind: Channel | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    page, next_cursor = await context.contacts.list_page(
        caller, owner, kind=kind, limit=limit, cursor=cursor
    )
    return render.JSON({"contacts": [render.contact(c) for c in page], "next_cursor": next_cursor})


@router.get(
    "/{contact_id}", response_model=ContactOut, summary="One contact", operation_id="getContact"
)
async def get_contact(owner: Owner, contact_id: str, context: Context, caller: Caller) -> Response:
    return render.JSON(render.contact(await context.contacts.get(caller, owner, contact_id)))


@router.patch(
    "/{contact_id}",
    response_model=ContactOut,
    summary="Change a contact",
    operation_id="changeContact",
    responses=openapi.problems(*openapi.WITH_BODY),
)
async def change_contact(
    owner: Owner, contact_id: str, patch: ContactPatch, context: Context, caller: Caller
) -> Response:
    saved = await context.contacts.change(caller, owner, contact_id, patch)
    return render.JSON(render.contact(saved))


@router.delete(
    "/{contact_id}", status_code=204, summary="Delete a contact", operation_id="deleteContact"
)
async def delete_contact(
    owner: Owner, contact_id: str, context: Context, caller: Caller
) -> Response:
    await context.contacts.delete(caller, owner, contact_id)
    return Response(status_code=204)

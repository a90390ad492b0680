"""`/v1/lists…`: shared lists, their members, and invitations to them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from starlette.responses import Response

from tocsin.api import openapi, render
from tocsin.api.context import Caller, Context
from tocsin.api.models import (
    OWNER_PATTERN,
    ListIn,
    ListOut,
    ListPatch,
    ListsOut,
    MemberIn,
)

_NOT_FOUND = {404: "No such list, or not one this caller sees (or no such member on it)."}
_MANAGE = {403: "A member's token that may not do this: only a list's owner manages it."}

router = APIRouter(
    prefix="/v1/lists",
    tags=["lists"],
    responses=openapi.problems(*openapi.AUTHENTICATED, 422, notes=_NOT_FOUND),
)

ListId = Annotated[str, Path(description="A list's id (anything else names no list: 404).")]
Member = Annotated[str, Path(pattern=OWNER_PATTERN)]


@router.post(
    "",
    status_code=201,
    response_model=ListOut,
    summary="Make a shared list",
    description="Its first member is an `owner` who joined: the token's owner, or `owner` with "
    "an API key (the list is then the app's: its key sees and manages it, no other app's "
    "does). Save reminders in it with `list` (POST /v1/reminders).",
    operation_id="createList",
    responses={
        201: {"headers": openapi.CREATED_HEADERS},
        **openapi.problems(*openapi.WITH_BODY, notes={403: "An owner token naming another."}),
    },
)
async def create_list(item: ListIn, context: Context, caller: Caller) -> Response:
    made = await context.lists.create(caller, item)
    return render.JSON(
        render.shared_list(made), status_code=201, headers={"Location": f"/v1/lists/{made.id}"}
    )


@router.get(
    "",
    response_model=ListsOut,
    summary="The lists the caller sees",
    description="An owner token: the lists its owner is on (invited or joined). An app key: "
    "its app's lists (those `member` is on, with one). An admin key: those `member` is on.",
    operation_id="listLists",
)
async def list_lists(
    context: Context,
    caller: Caller,
    member: Annotated[str | None, Query(pattern=OWNER_PATTERN)] = None,
) -> Response:
    found = await context.lists.lists(caller, member)
    return render.JSON({"lists": [render.shared_list(shared) for shared in found]})


@router.get(
    "/{list_id}",
    response_model=ListOut,
    summary="A list and its members",
    operation_id="getList",
)
async def get_list(list_id: ListId, context: Context, caller: Caller) -> Response:
    return render.JSON(render.shared_list(await context.lists.get(caller, list_id)))


@router.patch(
    "/{list_id}",
    response_model=ListOut,
    summary="Rename a list",
    operation_id="renameList",
    responses=openapi.problems(*openapi.WITH_BODY, 403, notes=_MANAGE),
)
async def rename_list(
    list_id: ListId, item: ListPatch, context: Context, caller: Caller
) -> Response:
    return render.JSON(render.shared_list(await context.lists.rename(caller, list_id, item.name)))


@router.delete(
    "/{list_id}",
    status_code=204,
    summary="Delete a list and cancel its reminders",
    description="A list owner's token, or a key of its app. In one transaction the list and "
    "its members go and every pending reminder of the list is cancelled, each ring still to "
    "come taken back as a cancel takes it back: once this answered 204, no ring of the list "
    "due after it rings. A ring claimed before (due at that instant, on its way) may still "
    "arrive, to the members whose contacts its send had already worked out; one not yet on "
    "its way finds no member and fails. The cancelled reminders stay readable by the list's "
    "app (status `cancelled`) until retention removes them.",
    operation_id="deleteList",
    responses=openapi.problems(
        403,
        409,
        notes={
            **_MANAGE,
            409: "Claims kept ringing one of its reminders while deleting it: nothing was "
            "deleted, retry.",
        },
    ),
)
async def delete_list(list_id: ListId, context: Context, caller: Caller) -> Response:
    await context.lists.delete(caller, list_id)
    return Response(status_code=204)


@router.put(
    "/{list_id}/members/{member}",
    response_model=ListOut,
    summary="Invite a member, or change a member's role",
    description="A new member is `invited`: no ring of the list goes to him until he accepts "
    "(POST …/accept). An owner's token of the list, or a key of its app. A list keeps an "
    "owner: its last one cannot be made an editor or viewer while others are on it (409).",
    operation_id="setListMember",
    responses=openapi.problems(
        *openapi.WITH_BODY,
        403,
        409,
        notes={**_MANAGE, 409: "The list is full (`too-many-members`), or its `last-owner`."},
    ),
)
async def set_member(
    list_id: ListId, member: Member, item: MemberIn, context: Context, caller: Caller
) -> Response:
    shared = await context.lists.set_member(caller, list_id, member, item.role)
    return render.JSON(render.shared_list(shared))


@router.post(
    "/{list_id}/members/{member}/accept",
    response_model=ListOut,
    summary="Accept an invitation to a list",
    description="The invited member's own token, or a key of the list's app (it acts for its "
    "users). From then on the list's rings go to his contacts too.",
    operation_id="acceptListInvitation",
    responses=openapi.problems(403, notes={403: "Another owner's token."}),
)
async def accept(list_id: ListId, member: Member, context: Context, caller: Caller) -> Response:
    return render.JSON(render.shared_list(await context.lists.accept(caller, list_id, member)))


@router.delete(
    "/{list_id}/members/{member}",
    status_code=204,
    summary="Leave a list, or remove a member",
    description="The member's own token leaves; a list owner's token, or a key of its app, "
    "removes him. No ring sent from then on goes to his contacts (one whose send had already "
    "begun may still arrive).",
    operation_id="removeListMember",
    responses=openapi.problems(
        403, 409, notes={**_MANAGE, 409: "The list's last owner, while others are on it."}
    ),
)
async def remove_member(
    list_id: ListId, member: Member, context: Context, caller: Caller
) -> Response:
    await context.lists.remove(caller, list_id, member)
    return Response(status_code=204)

"""`/v1/reminders…` and `/v1/occurrences`: parse HTTP, call the service, render the answer."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from tocsin.api import changes, idempotency, openapi, render
from tocsin.api.body import validated
from tocsin.api.context import ApiContext, Caller, Context, get_context, get_principal
from tocsin.api.direct import DirectRoute
from tocsin.api.idempotency import Answer, IdempotencyKey
from tocsin.api.models import (
    LIST_ID_PATTERN,
    OWNER_PATTERN,
    SNOOZE_FIELDS,
    BatchIn,
    BatchOut,
    FiringOut,
    FiringsOut,
    OccurrencesIn,
    OccurrencesOut,
    ReminderIn,
    ReminderListOut,
    ReminderOut,
    ReminderPatch,
    SnoozeIn,
)
from tocsin.domain import Reminder, ReminderStatus
from tocsin.time import Occurrence, format_utc

_NOT_FOUND = {404: "No such reminder, or not this caller's."}
# A reminder's answer carries its version and address.
_REMINDER: dict[int | str, Any] = {200: {"headers": openapi.REMINDER_HEADERS}}
_SNOOZE_409 = (
    "A cancelled reminder (`cancelled`), a series that has not rung (`not-rung`), a ring "
    "snoozed already (`already-snoozed`, with `snoozed_by`), or a reminder that kept changing "
    "(`conflict`)."
)
_EDIT_409 = "A cancelled reminder (`cancelled`); with the older form of a snooze: " + _SNOOZE_409
_NEW_ONE_OFF = "into a new one-off reminder (a ring that went off, or a series): the new one"
_SNOOZED_INTO: dict[str, Any] = {
    "model": ReminderOut,
    "description": f"Snoozed {_NEW_ONE_OFF}",
    "headers": openapi.REMINDER_HEADERS,
}
_CANCEL_409 = (
    "Not pending (`ringing`, `already-rang`, `ended`, `already-cancelled`), with "
    "`reminder_status` and `last_firing`."
)

_TAGS: list[str | Enum] = ["reminders"]
_PROBLEMS = openapi.problems(*openapi.AUTHENTICATED)
# The two create routes, the busiest, read the caller and then the body themselves, and say
# what they take in `openapi_extra` (why: `tocsin.api.openapi`); FastAPI only documents them
# (`tocsin.api.direct`).
creates = APIRouter(prefix="/v1", tags=_TAGS, responses=_PROBLEMS, route_class=DirectRoute)
router = APIRouter(prefix="/v1", tags=_TAGS, responses=_PROBLEMS)


@creates.post(
    "/reminders",
    status_code=201,
    response_model=ReminderOut,
    summary="Save a reminder",
    operation_id="createReminder",
    responses={
        201: {"headers": openapi.REMINDER_HEADERS, "links": openapi.REMINDER_LINKS},
        **openapi.problems(
            *openapi.WITH_BODY, notes={403: "An owner token acting for another owner."}
        ),
    },
    openapi_extra=openapi.body_and_key(ReminderIn),
)
async def create_reminder(request: Request) -> Response:
    context, caller = await get_context(request), await get_principal(request)
    item = await validated(request, ReminderIn)
    key = None
    header = request.headers.get(idempotency.HEADER)
    if header is not None:  # the canonical body is only needed to compare retries
        payload = item.model_dump(mode="json", exclude_unset=True)
        key = _key(header, caller.scope, "/v1/reminders", payload)
    answer = await context.reminders.create(caller, item, key)
    return _answer(answer, _created_headers(answer))


@creates.post(
    "/reminders:batch",
    response_model=BatchOut,
    summary="Save up to 1,000 reminders; each item is created or says why not",
    operation_id="createReminders",
    responses=openapi.problems(*openapi.WITH_BODY),
    openapi_extra=openapi.body_and_key(BatchIn),
)
async def create_batch(request: Request) -> Response:
    context, caller = await get_context(request), await get_principal(request)
    batch = await validated(request, BatchIn)
    header = request.headers.get(idempotency.HEADER)
    key = _key(header, caller.scope, "/v1/reminders:batch", batch.items)
    return _answer(await context.reminders.create_batch(caller, batch.items, key), {})


@router.get(
    "/reminders",
    response_model=ReminderListOut,
    summary="One page of an owner's reminders",
    operation_id="listReminders",
    responses=openapi.problems(
        404,
        422,
        notes={
            404: "With `list`: no such list, or not one whose reminders the caller reads.",
            422: "A bad query parameter, or no `owner` with an API key.",
        },
    ),
)
async def list_reminders(
    context: Context,
    caller: Caller,
    owner: Annotated[str | None, Query(pattern=OWNER_PATTERN)] = None,
    status: ReminderStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    list_id: Annotated[
        str | None,
        Query(
            alias="list",
            pattern=LIST_ID_PATTERN,
            description="A shared list's id: its reminders (instead of `owner`'s).",
        ),
    ] = None,
) -> Response:
    page, next_cursor = await context.reminders.list_page(
        caller, owner=owner, status=status, limit=limit, cursor=cursor, list_id=list_id
    )
    assignees = await context.reminders.assignees(page)
    return render.JSON(
        {"reminders": [render.reminder(r, assignees) for r in page], "next_cursor": next_cursor}
    )


@router.get(
    "/reminders/{reminder_id}",
    response_model=ReminderOut,
    summary="One reminder, with its ETag",
    operation_id="getReminder",
    responses={**_REMINDER, **openapi.problems(notes=_NOT_FOUND)},
)
async def get_reminder(reminder_id: str, context: Context, caller: Caller) -> Response:
    return await _reminder(context, await context.reminders.get(caller, reminder_id))


@router.patch(
    "/reminders/{reminder_id}",
    response_model=ReminderOut,
    summary="Edit a reminder (needs If-Match)",
    description="Changes the fields given, on the version `If-Match` names. A body of "
    "`snooze` or `snooze_until` alone is the older form of `POST /v1/reminders/{id}/snooze`, "
    "still accepted and answered as that is (200 moved, or 201 a new one-off).",
    operation_id="editReminder",
    responses={
        **_REMINDER,
        201: {
            **_SNOOZED_INTO,
            "description": f"The older form of a snooze, snoozed {_NEW_ONE_OFF}",
        },
        **openapi.problems(*openapi.WITH_BODY, 412, 428, notes={**_NOT_FOUND, 409: _EDIT_409}),
    },
)
async def edit_reminder(
    reminder_id: str,
    patch: ReminderPatch,
    context: Context,
    caller: Caller,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    changes.check_patch(patch)
    if patch.model_fields_set & SNOOZE_FIELDS:  # the older form of a snooze
        return await _snoozed(context, caller, reminder_id, patch.as_snooze())
    saved = await context.reminders.edit(caller, reminder_id, patch, if_match)
    return render.JSON(await context.reminders.shown(saved), headers=render.reminder_headers(saved))


@router.post(
    "/reminders/{reminder_id}/snooze",
    response_model=ReminderOut,
    summary="Snooze: ring again later (200 moved, or 201 a new one-off)",
    description="A pending one-off moves (200, the reminder); a one-off that has rung, or a "
    "series, gets a new one-off linked to its last ring (201, the new reminder). No "
    "`If-Match`: a snooze does not depend on the version read.",
    operation_id="snoozeReminder",
    responses={
        **_REMINDER,
        201: _SNOOZED_INTO,
        **openapi.problems(*openapi.WITH_BODY, notes={**_NOT_FOUND, 409: _SNOOZE_409}),
    },
)
async def snooze_reminder(
    reminder_id: str, body: SnoozeIn, context: Context, caller: Caller
) -> Response:
    changes.check_snooze(body)
    return await _snoozed(context, caller, reminder_id, body)


@router.delete(
    "/reminders/{reminder_id}",
    status_code=204,
    summary="Cancel a pending reminder",
    operation_id="cancelReminder",
    responses={
        200: {
            "model": ReminderOut,
            "description": "Cancelled, but a ring of it is already on its way and will still "
            "arrive (a series whose current occurrence was claimed first): the cancelled "
            "reminder, whose `last_firing` is that ring, `queued` or `sending`",
            "headers": openapi.REMINDER_HEADERS,
        },
        **openapi.problems(notes={**_NOT_FOUND, 409: _CANCEL_409}),
    },
)
async def cancel_reminder(reminder_id: str, context: Context, caller: Caller) -> Response:
    ringing = await context.reminders.cancel(caller, reminder_id)
    if ringing is not None:  # cancelled, but its current ring is already on its way
        return await _reminder(context, ringing)
    return Response(status_code=204)


@router.get(
    "/reminders/{reminder_id}/occurrences",
    response_model=OccurrencesOut,
    summary="The next rings of a reminder",
    operation_id="reminderOccurrences",
    responses=openapi.problems(422, notes=_NOT_FOUND),
)
async def reminder_occurrences(
    reminder_id: str,
    context: Context,
    caller: Caller,
    count: Annotated[int, Query(ge=1, le=100)] = 10,
) -> Response:
    found = await context.reminders.occurrences(caller, reminder_id, count)
    return _occurrences(found)


@router.post(
    "/occurrences",
    response_model=OccurrencesOut,
    summary="Preview a schedule",
    operation_id="previewOccurrences",
    responses=openapi.problems(*openapi.WITH_BODY),
)
async def preview_occurrences(body: OccurrencesIn, context: Context, caller: Caller) -> Response:
    found, sentence = await context.reminders.preview(body)
    if sentence is None:
        return _occurrences(found)
    return render.JSON({"text": sentence.text, "when": sentence.when, **_occurrence_list(found)})


@router.get(
    "/reminders/{reminder_id}/firings",
    response_model=FiringsOut,
    summary="A reminder's rings and how each was delivered",
    operation_id="reminderFirings",
    responses=openapi.problems(422, notes=_NOT_FOUND),
)
async def reminder_firings(
    reminder_id: str,
    context: Context,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Response:
    found = await context.reminders.firings(caller, reminder_id, limit)
    return render.JSON({"firings": [render.firing(f) for f in found]})


@router.post(
    "/firings/{firing_id}/done",
    response_model=FiringOut,
    summary="Mark a ring done (and stop its nags)",
    description="Marks the ring done (`done_at`; a second mark keeps the first's). For a "
    "reminder with `until_done`, the nags of that ring's occurrence still to come are taken "
    "back: a done that answered stops every nag not already on its way. Who may edit the "
    "reminder may mark its rings done.",
    operation_id="markDone",
    responses=openapi.problems(
        notes={
            404: "No such ring, or not this caller's.",
            409: "Claims kept taking its nags first: it is marked done, and a retry stops "
            "the nags left (`conflict`).",
        }
    ),
)
async def mark_done(firing_id: str, context: Context, caller: Caller) -> Response:
    return render.JSON(render.firing(await context.reminders.done(caller, firing_id)))


async def _snoozed(context: Context, caller: Caller, reminder_id: str, asked: SnoozeIn) -> Response:
    status, saved = await context.reminders.snooze(caller, reminder_id, asked)
    return await _reminder(context, saved, status)


def _key(header: str | None, scope: str, path: str, payload: Any) -> IdempotencyKey | None:
    return idempotency.idempotency_key(
        header, scope=scope, method="POST", path=path, payload=payload
    )


async def _reminder(context: ApiContext, reminder: Reminder, status: int = 200) -> Response:
    body = render.reminder(reminder, await context.reminders.assignees([reminder]))
    return render.JSON(body, status_code=status, headers=render.reminder_headers(reminder))


def _answer(answer: Answer, headers: dict[str, str]) -> Response:
    if answer.replayed:
        headers = {**headers, "Idempotent-Replayed": "true"}
    return render.JSON(answer.body, status_code=answer.status, headers=headers)


def _created_headers(answer: Answer) -> dict[str, str]:
    if answer.status != 201:
        return {}
    reminder_id = orjson.loads(answer.body)["id"]
    return {"ETag": render.etag(1), "Location": f"/v1/reminders/{reminder_id}"}


def _occurrences(found: list[Occurrence]) -> Response:
    return render.JSON(_occurrence_list(found))


def _occurrence_list(found: list[Occurrence]) -> dict[str, Any]:
    return {
        "occurrences": [
            {"at": format_utc(o.at), "local": o.local.isoformat(timespec="seconds")} for o in found
        ]
    }

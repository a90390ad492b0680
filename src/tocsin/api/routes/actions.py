"""`/v1/actions/{token}`: a ring's Done and Snooze links (`tocsin.actions`), followed by
someone who holds no credential but the link.

A GET never acts: mail scanners and link previews fetch every link in a message, and a
Done they fetched would stop a reminder nobody saw. It answers a small page whose one button
posts the link; the POST acts. A POST from that page's form (it asks for HTML) is answered
with a page again, anything else (a service worker, an app) with JSON as the API answers.
"""

from __future__ import annotations

import html
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from tocsin.actions import LINK_LIFETIME, Action, LinkRefused, SignedAction, read
from tocsin.api import openapi, render
from tocsin.api.context import ApiContext, Context
from tocsin.api.limits import too_many
from tocsin.api.models import FiringOut, ReminderOut
from tocsin.api.problems import Problem
from tocsin.domain import Firing

router = APIRouter(prefix="/v1", tags=["actions"])

_EXAMPLE = "done.06h2hgqf2y7g8415ze4g.1795980213.1796585013.3f9a0c12.0sO8IqHQh6lZb6Ry1lE2_g"
# Said in the schema, checked by `tocsin.actions.read` (whose refusals say what is wrong,
# on the page too, where a validation error would be JSON).
_SHAPE = (
    r"^(done|snooze)\.[0-9a-hjkmnp-tv-z]{20}\.[0-9]{1,11}\.[0-9]{1,11}"
    r"\.[0-9a-f]{8}\.[A-Za-z0-9_-]{22}$"
)
Token = Annotated[
    str,
    Path(
        description="What the link does, to which ring, until when, signed: as the ring "
        "carried it (`done.<firing id>.<expiry>.<key id>.<tag>`, or `snooze.…`).",
        examples=[_EXAMPLE],
        json_schema_extra={"pattern": _SHAPE},
    ),
]
# The page is this module's own: no script, no style, nothing from elsewhere; its form
# posts to this server alone, and the URL (the token) is told to no other site.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex",
}
_HTML = "text/html"
_ASKS = {Action.DONE: "Mark this ring done?", Action.SNOOZE: "Ring again in 10 minutes?"}
_BUTTONS = {Action.DONE: "Done", Action.SNOOZE: "Snooze 10 minutes"}
_ANSWERED = {
    Action.DONE: "Marked done. It will not ring again for this time.",
    Action.SNOOZE: "Snoozed: it rings again in 10 minutes.",
}
_REFUSALS = {
    400: "Not an action link of this server.",
    403: "The link is not valid.",
    409: "Nothing was changed.",
    410: "The link has expired.",
}
_DONE_EXAMPLE = {
    "id": "06h2hgqf2y7g8415ze4g.1795980213",
    "state": "sent",
    "due": "2026-11-29T19:23:33Z",
    "done_at": "2026-11-29T19:24:02Z",
    "...": "the rest of the ring, as GET /v1/reminders/{id}/firings shows it",
}
_SNOOZE_EXAMPLE = {
    "id": "06h2hh1c9x4kq2m8r3tb",
    "text": "Call mom",
    "status": "pending",
    "next": "2026-11-29T19:34:02Z",
    "snoozed_from": "06h2hgqf2y7g8415ze4g.1795980213",
    "...": "the rest of the reminder, as GET /v1/reminders/{id} shows it",
}
_LINK_PROBLEMS = {
    400: "Not an action link (`not-an-action-link`): cut short, or not one of this server's.",
    403: "The signature does not match what the link says (`action-link-forged`: it was "
    "changed), or it was signed with a key this server no longer holds "
    "(`action-link-key-unknown`).",
    404: "No such ring (`not-found`): its reminder was deleted, its ring is past retention, "
    "or its first send is still on its way.",
    410: f"The link has expired (`action-link-expired`): links last {LINK_LIFETIME.days} days "
    "after their ring.",
    429: "Too many refused links from this address (`rate-limited`): wait `Retry-After`.",
}


def _or_page(responses: dict[int | str, Any]) -> dict[int | str, Any]:
    """Error `responses` that are a page to a client asking for HTML, a problem otherwise."""
    page = {_HTML: {"schema": {"type": "string"}}}
    return {
        status: {**response, "content": {**response["content"], **page}}
        for status, response in responses.items()
    }


@router.get(
    "/actions/{token}",
    summary="The page of a ring's action link: one button that posts it (never acts)",
    description="What a person's browser, or a mail scanner, gets when the link is opened: "
    "a small HTML page that asks, with one button posting the link. It changes nothing. A "
    "link that is not valid is refused as the POST would refuse it: a page saying why to a "
    "client that asks for HTML (a browser), a problem to any other.",
    operation_id="actionLinkPage",
    response_class=Response,
    responses={
        200: {"description": "The page", "content": {_HTML: {"schema": {"type": "string"}}}},
        **_or_page(openapi.problems(notes=_LINK_PROBLEMS)),
    },
)
async def action_page(token: Token, request: Request, context: Context) -> Response:
    try:
        signed = _signed(request, context, token)
    except Problem as problem:
        return _refused(problem, request)
    form = (
        f'<form method="post" action="{html.escape(token)}">'
        f'<button type="submit">{_BUTTONS[signed.action]}</button></form>'
    )
    due = f"The ring of {signed.due:%Y-%m-%d %H:%M} UTC."
    return _page(200, _ASKS[signed.action], due, form=form)


@router.post(
    "/actions/{token}",
    response_model=FiringOut | ReminderOut,
    summary="Follow a ring's action link: mark the ring done, or snooze it 10 minutes",
    description="Needs no credential: the link is signed for its one ring and action. A "
    "done is `POST /v1/firings/{id}/done` (200, the ring; a second keeps the first "
    'instant). A snooze is `POST /v1/reminders/{id}/snooze` with `{"snooze": "10m"}` '
    "(200, the one-off still to ring moved; 201, a new one-off for a ring that went off; a "
    "second is 409 `already-snoozed`). Sent from the link's page (`Accept: text/html`), "
    "the answer is a page saying what was done.",
    operation_id="followActionLink",
    responses={
        200: {
            "description": "Done (the ring), or snoozed (the reminder still to ring, moved)",
            "content": {
                "application/json": {
                    "examples": {
                        "done": {"value": _DONE_EXAMPLE},
                        "snoozed": {"value": {**_SNOOZE_EXAMPLE, "snoozed_from": None}},
                    }
                }
            },
        },
        201: {
            "model": ReminderOut,
            "description": "Snoozed into a new one-off reminder (a ring that went off)",
            "content": {"application/json": {"example": _SNOOZE_EXAMPLE}},
        },
        **_or_page(
            openapi.problems(
                503,
                notes={
                    **_LINK_PROBLEMS,
                    409: "A snooze of a ring snoozed already (`already-snoozed`, with "
                    "`snoozed_by`), of a cancelled reminder (`cancelled`), or one that kept "
                    "changing (`conflict`); a done whose nags kept being claimed (`conflict`).",
                },
            )
        ),
    },
)
async def follow_action(token: Token, request: Request, context: Context) -> Response:
    try:
        signed = _signed(request, context, token)
        status, changed = await context.reminders.act(signed)
    except Problem as problem:
        return _refused(problem, request)
    if _wants_page(request):
        return _page(status, _ANSWERED[signed.action])
    if isinstance(changed, Firing):
        return render.JSON(render.firing(changed), status_code=status)
    body = render.reminder(changed, await context.reminders.assignees([changed]))
    return render.JSON(body, status_code=status, headers=render.reminder_headers(changed))


def _signed(request: Request, context: ApiContext, token: str) -> SignedAction:
    """What the link asks, or its problem; refused links count against the address as failed
    authentications do (a tag cannot be guessed, but nobody need be let try)."""
    address = request.client.host if request.client is not None else "-"
    failures = context.limits.failures
    wait = failures.peek(address)
    if wait:
        raise too_many(wait, f"{address}: too many refused links")
    try:
        return read(context.store.keyring, token, now=context.clock.now())
    except LinkRefused as refused:
        failures.take(address)
        raise Problem(refused.status, refused.slug, refused.detail) from None


def _wants_page(request: Request) -> bool:
    """Whether the client asked for HTML: a browser (the link opened, the page's form)."""
    return _HTML in request.headers.get("accept", "")


def _refused(problem: Problem, request: Request) -> Response:
    """A refusal as a page for a browser, else as the problem it is."""
    if not _wants_page(request):
        return problem.response()
    return _page(problem.status, _REFUSALS.get(problem.status, "Not done."), problem.detail)


def _page(status: int, heading: str, *lines: str, form: str = "") -> Response:
    """A page of its own (no script, no style): a heading, each line as text, then `form`
    (this module's markup)."""
    body = "".join(f"<p>{html.escape(line)}</p>" for line in lines) + form
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Tocsin</title></head><body><h1>{html.escape(heading)}</h1>{body}</body></html>\n"
    )
    return Response(
        page, status_code=status, media_type="text/html; charset=utf-8", headers=_HEADERS
    )

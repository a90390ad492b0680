"""A Twilio-like Messages API for the sms channel's tests: an aiohttp server on loopback that
checks basic auth and the form fields as Twilio does, answers 201 with a message sid, or the
status and error body the test asks for, and replays the answer to a repeated
`Idempotency-Key` as a gateway that honours one does."""

from __future__ import annotations

import asyncio
import base64
import re
import secrets
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

ACCOUNT_SID = "AC" + "0123456789abcdef" * 2
AUTH_TOKEN = "twilio-test-auth-token-0123456789"
HOST = "127.0.0.1"
E164 = re.compile(r"\+[1-9][0-9]{7,14}")


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What to answer instead of 201."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def error(cls, status: int, code: int, message: str, **headers: str) -> Answer:
        body = {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        }
        return cls(status=status, body=body, headers=headers)


@dataclass(frozen=True, kw_only=True)
class Request:
    """One request that passed the checks, as the server saw it."""

    form: dict[str, str]
    headers: CIMultiDict[str]
    peer: tuple[str, int]  # the client's address: one per connection


class TwilioPeer:
    """The server's state: what it received, and what the test tells it to answer."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[Request] = []
        self.answers: dict[str, list[Answer]] = {}  # To -> the next answers, in order
        self.delay = 0.0  # seconds to wait before answering
        self._replies: dict[str, tuple[int, dict[str, Any]]] = {}  # Idempotency-Key -> reply

    def answer(self, number: str, *answers: Answer) -> None:
        """Answer the next requests to `number` with `answers`, then 201 again."""
        self.answers.setdefault(number, []).extend(answers)

    async def messages(self, request: web.Request) -> web.Response:
        if not _authorised(request.headers.get("Authorization", "")):
            return _error(Answer.error(401, 20003, "Authenticate"))
        if request.match_info["sid"] != ACCOUNT_SID:  # another account's, or a wrong path
            return _error(Answer.error(404, 20404, "The requested resource was not found"))
        if request.content_type != "application/x-www-form-urlencoded":
            return _error(Answer.error(400, 20001, "expected a form"))
        form = {key: str(value) for key, value in (await request.post()).items()}
        problem = _check(form)
        if problem is not None:
            return _error(problem)
        if self.delay:
            await asyncio.sleep(self.delay)
        key = request.headers.get("Idempotency-Key")
        if key is not None and key in self._replies:
            status, body = self._replies[key]
            return web.json_response(body, status=status)
        peername = request.transport.get_extra_info("peername") if request.transport else None
        self.requests.append(
            Request(
                form=form, headers=CIMultiDict(request.headers), peer=tuple(peername or ("", 0))
            )
        )
        return self._reply(form, key)

    def _reply(self, form: dict[str, str], key: str | None) -> web.Response:
        queued = self.answers.get(form["To"])
        if queued:
            return _error(queued.pop(0))
        body = {
            "sid": "SM" + secrets.token_hex(16),
            "account_sid": ACCOUNT_SID,
            "to": form["To"],
            "from": form.get("From"),
            "messaging_service_sid": form.get("MessagingServiceSid"),
            "body": form["Body"],
            "status": "queued",
        }
        if key is not None:
            self._replies[key] = (201, body)
        return web.json_response(body, status=201)


def _authorised(header: str) -> bool:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    expected = f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()
    return secrets.compare_digest(base64.b64decode(encoded), expected)


def _check(form: dict[str, str]) -> Answer | None:
    """Twilio's own checks of a new message's fields (the error codes are Twilio's)."""
    if not E164.fullmatch(form.get("To", "")):
        return Answer.error(400, 21211, f"The 'To' number {form.get('To')} is not valid.")
    if "From" not in form and "MessagingServiceSid" not in form:
        return Answer.error(400, 21603, "A 'From' or 'MessagingServiceSid' is required.")
    body = form.get("Body", "")
    if not body:
        return Answer.error(400, 21602, "Message body is required.")
    if len(body) > 1600:
        return Answer.error(400, 21617, "The body exceeds the 1600 character limit.")
    validity = form.get("ValidityPeriod")
    if validity is not None and not (validity.isdigit() and 1 <= int(validity) <= 36_000):
        return Answer.error(400, 21624, "Invalid validity period value.")
    return None


def _error(answer: Answer) -> web.Response:
    return web.json_response(answer.body, status=answer.status, headers=answer.headers)


@asynccontextmanager
async def twilio_peer(*, tls: ssl.SSLContext | None = None) -> AsyncIterator[TwilioPeer]:
    """The Messages API on 127.0.0.1 (a free port) in this event loop, for the block's time
    (over TLS with `tls`)."""
    peer = TwilioPeer()
    app = web.Application()
    app.router.add_post("/2010-04-01/Accounts/{sid}/Messages.json", peer.messages)
    # A request the client gave up on is cancelled (its `delay` with it), so closing the
    # server does not wait for it.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, HOST, 0, ssl_context=tls)
    await site.start()
    port = runner.addresses[0][1]
    peer.base_url = f"{'https' if tls else 'http'}://{HOST}:{port}"
    try:
        yield peer
    finally:
        await runner.cleanup()

"""The `apprise` channel: every other service people use (ntfy, Gotify, Pushover, Telegram,
Slack, Discord, Matrix, …) through the Apprise library, one Apprise URL per contact.

Off unless TOCSIN_APPRISE_ENABLED=true: an Apprise URL names any host, so an owner who may
save contacts may make this server call URLs of their choosing. Where each URL connects is
held to the outbound URL policy, when it is saved and as each notification connects
(`tocsin.channels.apprise_reach`).

Apprise is synchronous (requests underneath), so each notification runs in a bounded thread
pool and the event loop waits for it at most `time_limit`. A thread cannot be cancelled:
at the limit the attempt is abandoned and counted as a retry, while the thread finishes on
its own (the plugin's socket timeouts are cut to the limit, so it finishes soon after) and
holds its pool slot until then.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import apprise
from pydantic import Field

from tocsin.actions import ActionLinks
from tocsin.channels import apprise_reach
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outside import outside_text
from tocsin.settings_core import CoreSettings

KIND = Channel.APPRISE
ENABLED_BY = "TOCSIN_APPRISE_ENABLED=true"

MAX_URL_LENGTH = 2048
TITLE = "Reminder"
MASK = "***"
# Services that notify the machine Tocsin runs on (its desktop, its syslog, a USB light),
# never the owner: refused as contacts.
LOCAL_SERVICES = frozenset(
    {"dbus", "kde", "qt", "glib", "gnome", "macosx", "windows", "syslog", "blink1"}
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,31})://")
# Pieces of a URL that may be credentials: everything between its separators.
_URL_PIECES = re.compile(r"[^/:@?&=#,;+\s]+")
_CONTACT_FIELDS = frozenset({"url"})


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`{"url": <an Apprise URL>}`, checked by Apprise itself (it must load the URL as one
    of its services) and at most MAX_URL_LENGTH characters. Errors name the service or the
    scheme, never the URL: it usually carries a token or a password."""
    unknown = sorted(set(fields) - _CONTACT_FIELDS)
    if unknown:
        raise InvalidInput(unknown[0], "unknown field (an apprise contact has `url`)")
    url = fields.get("url")
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("url", "required: an Apprise URL such as ntfys://ntfy.sh/my-topic")
    if len(url) > MAX_URL_LENGTH or not url.isprintable():
        raise InvalidInput("url", f"must be at most {MAX_URL_LENGTH} printable characters")
    scheme = _SCHEME.match(url)
    if scheme is None:
        raise InvalidInput("url", "not an Apprise URL (service://…)")
    plugin = _load(url)
    if plugin is None:
        raise InvalidInput(
            "url",
            f"Apprise cannot use this {scheme.group(1).lower()}:// URL (unknown service, or "
            "fields missing or malformed; see the Apprise wiki for the service's URL)",
        )
    if scheme.group(1).lower() in LOCAL_SERVICES:
        raise InvalidInput("url", f"{plugin.service_name} notifies the server, not you")
    return {"url": url}


def check_reach(url: str, *, allow_private: bool) -> None:
    """`InvalidInput` naming `url` when the outbound URL policy refuses where the service
    of this (valid) Apprise URL connects; the reason quotes no part of the URL."""
    plugin = _load(url)
    reason = None if plugin is None else apprise_reach.refused(plugin, allow_private=allow_private)
    if reason is not None:
        raise InvalidInput("url", reason)


class AppriseSettings(CoreSettings):
    """The `apprise` channel's (ntfy, Gotify, Pushover, Telegram… through Apprise)."""

    apprise_enabled: bool = Field(
        default=False,
        description="Deliver to owners' Apprise URLs. Off by default: it lets owners make "
        "this server call URLs of their choosing.",
    )
    apprise_threads: int = Field(
        default=8, ge=1, description="Threads running Apprise's blocking notify calls."
    )
    apprise_timeout_seconds: float = Field(
        default=20.0, gt=0, description="The longest one Apprise notification may take."
    )


def build(
    settings: AppriseSettings, clock: Clock, links: ActionLinks | None = None
) -> AppriseSender | None:
    """The sender when TOCSIN_APPRISE_ENABLED is true, else None. Its notifications carry
    no action links, `links` or not: each service shows (or drops) them its own way
    (docs/channels.md#apprise)."""
    if not settings.apprise_enabled:
        return None
    # Apprise loads its ~150 plugins on first use (~0.4 s): here at startup, not in a send.
    _load("json://localhost/")
    return AppriseSender(
        threads=settings.apprise_threads,
        timeout=settings.apprise_timeout_seconds,
        allow_private=settings.allow_private_urls,
    )


@dataclass(frozen=True, slots=True)
class _Outcome:
    ok: bool
    service: str
    reason: str | None = None
    refused: bool = False  # by the outbound URL policy (`reason` names the service): final


class AppriseSender(DestinationSender):
    """Runs one Apprise notification per send in a pool of `threads` threads.

    The pool is the concurrency limit: with every thread busy (a slow service), later sends
    wait in its queue, and the wait counts against their time limit; a send still queued at
    its limit is cancelled before it starts.
    """

    def __init__(self, *, threads: int, timeout: float, allow_private: bool = False) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tocsin-apprise")
        self._timeout = timeout
        self._allow_private = allow_private

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        limit = min(time_limit, self._timeout)
        if limit <= 0:  # requests would refuse a timeout of 0
            return DeliveryResult.retry("no time left before the deadline")
        call = functools.partial(
            _notify, destination.address["url"], firing.text, limit, self._allow_private
        )
        try:
            async with asyncio.timeout(limit):
                outcome = await asyncio.get_running_loop().run_in_executor(self._pool, call)
        except TimeoutError:
            return DeliveryResult.retry(f"apprise: no answer within {limit:.1f} s (abandoned)")
        if outcome.ok:
            return DeliveryResult.sent()
        if outcome.refused:
            return DeliveryResult.failed(f"apprise: {outcome.reason}")
        # Apprise says only "failed": a wrong token and a service down look alike, so every
        # failure is retried until the deadline (freshness bounds what a wrong URL costs).
        reason = f": {outcome.reason}" if outcome.reason else ""
        return DeliveryResult.retry(f"apprise: {outcome.service} notification failed{reason}")

    async def close(self) -> None:
        # Queued calls are dropped; a thread still in an abandoned call is not waited for
        # here (Python's exit still joins it, within its socket timeouts).
        self._pool.shutdown(wait=False, cancel_futures=True)


def _notify(url: str, text: str, limit: float, allow_private: bool) -> _Outcome:
    """One notification, in a pool thread, held to the outbound URL policy. Never raises: a
    plugin's exception is a failure."""
    plugin = _load(url)
    if plugin is None:
        return _Outcome(ok=False, service="apprise", reason="the URL no longer loads")
    service = plugin.service_name or "Apprise"
    reason = apprise_reach.refused(plugin, allow_private=allow_private)
    if reason is not None:
        return _Outcome(ok=False, service=service, reason=reason, refused=True)
    # requests' timeouts are per connect and per read, not for the whole call: these bound
    # each wait, so an abandoned thread ends soon after the limit instead of Apprise's 4 s
    # per read times however many reads the service needs.
    plugin.socket_connect_timeout = min(plugin.socket_connect_timeout, limit)
    plugin.socket_read_timeout = min(plugin.socket_read_timeout, limit)
    notifier = apprise.Apprise(asset=_ASSET)
    notifier.add(plugin)
    with apprise_reach.connections_checked(allow_private=allow_private) as check:
        try:
            result = notifier.notify(body=text, title=TITLE)
        except Exception as error:  # a plugin's bug must not kill the pool thread's caller
            return _Outcome(ok=False, service=service, reason=type(error).__name__)
    with result:
        if check.refused:  # Apprise logs it as a connection error, which a retry would repeat
            reason = f"{service} refused: {mask(check.refused[0], url)}"
            return _Outcome(ok=False, service=service, reason=reason, refused=True)
        if result:
            return _Outcome(ok=True, service=service)
        reasons = [e.message for e in result.logs() if e.level in ("WARNING", "ERROR")]
    return _Outcome(ok=False, service=service, reason=mask(reasons[-1], url) if reasons else None)


def mask(message: str, url: str) -> str:
    """`message` (from Apprise's log) with every piece of `url` that may be a credential
    replaced by MASK: all of the URL after its scheme, piece by piece, as written and
    decoded. Apprise puts tokens anywhere (`tgram://{bot_token}/{chat_id}`), so none is
    trusted; pieces under 4 characters (`api`, a short port) are kept unless they are the
    password. A piece of 8 or more is masked wherever it appears (a token glued to a word,
    as in Telegram's `/bot<token>/`), a shorter one only as a whole word, so a topic such as
    `news` does not mangle the words around it."""
    rest = url.split("://", 1)[-1]
    for piece in sorted(set(_secrets(rest)), key=len, reverse=True):
        pattern = re.escape(piece)
        if len(piece) < 8:
            pattern = rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"
        message = re.sub(pattern, MASK, message)
    return outside_text(message)  # masked first: a piece of the URL is found as it was written


def _secrets(rest: str) -> Iterable[str]:
    userinfo = rest.split("@", 1)[0] if "@" in rest.split("/", 1)[0] else ""
    password = userinfo.split(":", 1)[1] if ":" in userinfo else ""
    for piece in _URL_PIECES.findall(rest):
        for form in (piece, unquote(piece)):
            if len(form) >= 4 or (form and form in (password, unquote(password))):
                yield form


def _load(url: str) -> apprise.NotifyBase | None:
    """Apprise's plugin for `url`, or None when Apprise cannot use it — also when its parse
    raises instead of saying so (its Telegram plugin pops a token from an empty path for
    `tgram://` and a bare space: an IndexError, which must be a 422, never a 500)."""
    _keep_apprise_logs_in()
    try:
        return apprise.Apprise.instantiate(url, asset=_ASSET)
    except Exception:
        return None


@functools.cache
def _keep_apprise_logs_in() -> None:
    """Apprise's own log lines stay out of the server's log: at DEBUG they carry request
    URLs, and many services put the token in the URL (Telegram's bot token, Discord's
    webhook token). Each failure's reason reaches the firing's history instead, masked."""
    logger = logging.getLogger("apprise")
    logger.propagate = False
    logger.addHandler(logging.NullHandler())  # no "last resort" printing to stderr either
    logger.setLevel(logging.WARNING)


# One asset for every call: Apprise's own per-service timeout (60 s in its own thread pool)
# is off, because this channel's pool and time limit already bound the call, and
# async_mode=False keeps the call in the calling pool thread.
_ASSET = apprise.AppriseAsset(async_mode=False, service_timeout=0)

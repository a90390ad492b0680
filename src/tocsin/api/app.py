"""The FastAPI app: `create_app` wires the store, settings and clock into the routes."""

from __future__ import annotations

import logging
import time

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tocsin import __version__
from tocsin.actions import action_links
from tocsin.api import docs, metrics, openapi, problems
from tocsin.api.arrivals import ArrivalService
from tocsin.api.body import BodyGuard
from tocsin.api.contacts import ContactService
from tocsin.api.context import ApiContext
from tocsin.api.feed import Feed
from tocsin.api.limits import RateLimits
from tocsin.api.loopback import LoopbackGuard
from tocsin.api.metrics import count_request
from tocsin.api.models import BatchIn, ProblemOut, ReminderIn
from tocsin.api.places import PlaceService
from tocsin.api.proxies import ClientAddress, TrustedProxies
from tocsin.api.quiet import QuietHoursService
from tocsin.api.routes import (
    actions,
    channels,
    contacts,
    feed,
    health,
    lists,
    page,
    places,
    quiet,
    reminders,
    status,
)
from tocsin.api.security import Authenticator
from tocsin.api.service import ReminderService
from tocsin.api.sse import ServerSend
from tocsin.auth import is_loopback
from tocsin.channels import configured_channels
from tocsin.clock import Clock
from tocsin.settings import Settings
from tocsin.statusboard.board import Board
from tocsin.store import Store

access_log = logging.getLogger("tocsin.api.access")


def create_app(*, store: Store, settings: Settings, clock: Clock) -> FastAPI:
    """The API over an open store. Requests without a key are accepted only while no API
    key exists and `settings.host` is a loopback address."""
    app = FastAPI(
        title="Tocsin",
        version=__version__,
        description="Reminders that ring on time. Errors are RFC 9457 problem details.",
        openapi_url="/openapi.json",
        # Served from the package's own files instead of FastAPI's CDN pages (`api/docs.py`).
        docs_url=None,
        redoc_url=None,
    )
    auth = Authenticator(
        store, clock, secret=settings.secret, open_allowed=is_loopback(settings.host)
    )
    reminders_service = ReminderService(
        store,
        clock,
        configured=configured_channels(settings),
        default_webhook=settings.webhook_url is not None,
        max_pending=settings.max_reminders_per_owner,
    )
    place_service = PlaceService(store, clock, max_per_owner=settings.max_places_per_owner)
    app.state.tocsin = ApiContext(
        store=store,
        settings=settings,
        clock=clock,
        auth=auth,
        reminders=reminders_service,
        contacts=ContactService(
            store,
            clock,
            allow_private_urls=settings.allow_private_urls,
            max_per_owner=settings.max_contacts_per_owner,
        ),
        places=place_service,
        arrivals=ArrivalService(store, place_service, clock),
        quiet_hours=QuietHoursService(store, clock),
        lists=reminders_service.lists,
        limits=RateLimits.of(
            key_per_second=settings.rate_limit_key_per_second,
            owner_per_second=settings.rate_limit_owner_per_second,
            failures_per_minute=settings.rate_limit_auth_failures_per_minute,
        ),
        feed=Feed(
            store,
            clock,
            heartbeat=settings.feed_heartbeat_seconds,
            auth=auth,
            max_per_owner=settings.max_feed_connections_per_owner,
            links=action_links(settings.links_base_url, store.keyring),
        ),
    )
    problems.install(app)
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(reminders.creates)
    app.include_router(reminders.router)
    app.include_router(channels.router)
    app.include_router(contacts.router)
    app.include_router(places.router)
    app.include_router(quiet.router)
    app.include_router(lists.router)
    app.include_router(feed.router)
    app.include_router(actions.router)
    app.include_router(page.router)
    app.include_router(docs.router)
    app.state.status_board = Board(
        store, clock, parts=settings.parts, lease_seconds=settings.lease_seconds
    )
    app.include_router(status.router)
    # The create routes' bodies, and the problem every error answer is.
    openapi.complete(app, [ReminderIn, BatchIn, ProblemOut])
    app.add_middleware(BodyGuard)
    app.add_middleware(LoopbackGuard, is_open=auth.is_open)
    app.add_middleware(AccessLog)
    # Outside the others: every layer below sees the client's address, not its proxy's.
    app.add_middleware(
        ClientAddress,
        proxies=TrustedProxies(settings.trusted_proxy_networks),
        header=settings.forwarded_header,
    )
    app.add_middleware(ServerSend)  # outermost of ours: the feed's events skip the others
    return app


class AccessLog:
    """Per request: its metrics (`count_request`) and one structured log line: method,
    path, status, duration, caller."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        state = scope.setdefault("state", {})  # shared with copies of the scope below

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - started
            count_request(scope, status, seconds)
            if access_log.isEnabledFor(logging.INFO):
                self._log(scope, state, status, seconds)

    @staticmethod
    def _log(scope: Scope, state: dict[str, object], status: int, seconds: float) -> None:
        access_log.info(
            "request",
            extra={
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round(seconds * 1000, 1),
                "caller": state.get("principal", "-"),
            },
        )

"""The `webhook` channel: POST the ring as JSON to the app's URL, signed (Standard Webhooks).

The URL and secret are the reminder's app's (`tocsin keys create --webhook-url`), else the
deployment-wide `TOCSIN_WEBHOOK_URL` / `TOCSIN_WEBHOOK_SECRET`. `webhook-id` is the firing id,
the delivery identity: a receiver that saw it already can drop the repeat.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
import orjson

from tocsin import __version__
from tocsin.channels.base import NOT_CONFIGURED, DeliveryResult, NoTarget, Sender
from tocsin.channels.signing import secret_key, sign
from tocsin.domain import App, Firing
from tocsin.errors import InvalidInput
from tocsin.outbound import GuardedResolver, check_url, refused_by_policy
from tocsin.store.base import Store

logger = logging.getLogger(__name__)

APP_CACHE_SECONDS = 30.0
MAX_ERROR_BODY = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class Endpoint:
    """Where one firing's webhook goes. `app` is None for the deployment-wide endpoint."""

    url: str
    key: bytes | None
    app: str | None


class WebhookSender(Sender[Endpoint]):
    """Posts rings over one shared pool of HTTP/1.1 keep-alive connections.

    The client is aiohttp: with 256 sends in flight to one receiver, httpx's connection pool
    rescans its whole queue on every request and response, and carried ~560 posts a second
    where aiohttp carries ~13,000 on the same machine (see docs/benchmarks.md).
    """

    def __init__(
        self,
        store: Store,
        *,
        default_url: str | None,
        default_secret: str | None,
        timeout: float,
        max_connections: int,
        allow_private: bool = False,
    ) -> None:
        self._store = store
        self._allow_private = allow_private
        self._default = (
            Endpoint(
                url=default_url,
                key=secret_key(default_secret) if default_secret else None,
                app=None,
            )
            if default_url
            else None
        )
        self._timeout = timeout
        self._max_connections = max_connections
        self._apps: dict[str, tuple[float, App | None]] = {}
        self._session: aiohttp.ClientSession | None = None  # made in the event loop

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self._max_connections,
                    limit_per_host=0,
                    resolver=GuardedResolver(allow_private=self._allow_private),
                ),
                headers={"user-agent": f"tocsin/{__version__}"},
                cookie_jar=aiohttp.DummyCookieJar(),  # a receiver's cookies are not kept
            )
        return self._session

    async def target(self, firing: Firing) -> Endpoint:
        app = await self._app(firing.source) if firing.source else None
        if app is not None and app.webhook_url:
            if app.webhook_disabled:
                raise NoTarget(f"webhook endpoint of app {app.name!r} disabled (410 Gone)")
            key = secret_key(app.webhook_secret) if app.webhook_secret else None
            return Endpoint(url=app.webhook_url, key=key, app=app.name)
        if self._default is not None:
            return self._default
        raise NoTarget(NOT_CONFIGURED)

    async def send(self, firing: Firing, target: Endpoint, *, time_limit: float) -> DeliveryResult:
        refused = self._refused(target.url)
        if refused is not None:
            return DeliveryResult.failed(refused)
        body = _body(firing)
        timestamp = int(time.time())
        headers = {
            "content-type": "application/json",
            "webhook-id": firing.id,
            "webhook-timestamp": str(timestamp),
        }
        if target.key is not None:
            headers["webhook-signature"] = sign(target.key, firing.id, timestamp, body)
        limit = aiohttp.ClientTimeout(total=min(time_limit, self._timeout))
        try:
            async with self._client().post(
                target.url, data=body, headers=headers, timeout=limit, allow_redirects=False
            ) as response:
                status = response.status
                answer = await response.read()  # read whole, so the connection is reused
                return await self._classify(status, response.headers, answer, target)
        except TimeoutError:
            return DeliveryResult.retry("timeout")
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as error:
            return DeliveryResult.failed(f"bad webhook URL: {error}")
        except aiohttp.ClientError as error:
            policy = refused_by_policy(error)
            if policy is not None:
                return DeliveryResult.failed(str(policy))
            return DeliveryResult.retry(f"connection error: {type(error).__name__}: {error}")

    def _refused(self, url: str) -> str | None:
        """Why the policy refuses the URL as written (a private IP, a scheme other than
        http(s)); names are checked as they resolve, by the connector's resolver."""
        try:
            check_url(url, allow_private=self._allow_private)
        except InvalidInput as error:
            return f"webhook URL refused: {error.message}"
        return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _classify(
        self, status: int, headers: Mapping[str, str], answer: bytes, target: Endpoint
    ) -> DeliveryResult:
        if 200 <= status < 300:
            return DeliveryResult.sent(headers.get("x-message-id"))
        text = answer[:MAX_ERROR_BODY].decode("utf-8", "replace")
        error = f"HTTP {status}: {text}".rstrip(": ")
        if status == 410:
            await self._disable(target)
            return DeliveryResult.failed(f"{error} (endpoint disabled)")
        if status in (408, 429) or status >= 500:
            retry_after = parse_retry_after(headers.get("retry-after"))
            return DeliveryResult.retry(error, retry_after)
        return DeliveryResult.failed(error)

    async def _disable(self, target: Endpoint) -> None:
        if target.app is None:
            logger.warning("the deployment-wide webhook URL answered 410 Gone: fix the setting")
            return
        await self._store.disable_webhook(target.app)
        self._apps.pop(target.app, None)
        logger.warning("webhook of app %s disabled: it answered 410 Gone", target.app)

    async def _app(self, name: str) -> App | None:
        cached = self._apps.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        app = await self._store.find_app(name=name)
        self._apps[name] = (time.monotonic() + APP_CACHE_SECONDS, app)
        return app


def _body(firing: Firing) -> bytes:
    return orjson.dumps(
        {
            "type": "reminder.due",
            "id": firing.id,
            "reminder_id": firing.reminder_id,
            "owner": firing.owner,
            "text": firing.text,
            "due": _utc(firing.due_at),
            "deadline": _utc(firing.deadline),
            "metadata": firing.metadata,
            "attempt": firing.attempts + 1,
        }
    )


def _utc(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())

"""The `webhook` channel: POST the ring as JSON to a URL, signed (Standard Webhooks).

Delivery gives it the destinations: the reminder's app's endpoint (`tocsin keys create
--webhook-url`), else the deployment-wide `TOCSIN_WEBHOOK_URL` / `TOCSIN_WEBHOOK_SECRET`, and
the owner's own webhook contacts, each with its own secret. `webhook-id` is the firing id, the
delivery identity: a receiver that saw it already can drop the repeat.
"""

from __future__ import annotations

import email.utils
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp
import orjson
from pydantic import Field, model_validator

from tocsin.actions import ActionLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.sessions import http_session
from tocsin.channels.signing import secret_key, sign
from tocsin.clock import Clock, SystemClock
from tocsin.domain import Firing
from tocsin.errors import InvalidInput
from tocsin.outbound import GuardedResolver, check_url, refused_by_policy, refused_url
from tocsin.outside import MAX_ID, outside_text
from tocsin.settings_core import CoreSettings

logger = logging.getLogger(__name__)


class WebhookSettings(CoreSettings):
    """The `webhook` channel's: where rings go without an app URL, how they are signed."""

    webhook_url: str | None = Field(
        default=None, description="Where webhook rings go when their app has no URL of its own."
    )
    webhook_secret: str | None = Field(
        default=None,
        repr=False,
        description="Signs the rings sent to TOCSIN_WEBHOOK_URL (Standard Webhooks, "
        "`whsec_…`); apps with their own URL have their own secret.",
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Longest one webhook request may take."
    )

    @model_validator(mode="after")
    def _webhook_url_may_be_reached(self) -> WebhookSettings:
        if self.webhook_url is not None:
            try:
                check_url(self.webhook_url, allow_private=self.allow_private_urls)
            except InvalidInput as error:
                raise ValueError(f"TOCSIN_WEBHOOK_URL: {error.message}") from None
        return self


class WebhookSender(DestinationSender):
    """Posts rings over one shared pool of HTTP/1.1 keep-alive connections.

    The client is aiohttp: with 256 sends in flight to one receiver, httpx's connection pool
    rescans its whole queue on every request and response, and carried ~560 posts a second
    where aiohttp carries ~13,000 on the same machine (see docs/benchmarks.md).
    `webhook-timestamp` is read from `clock`: in a worker, the database's clock, by which the
    ring is timed (a worker host's own clock may be off by its skew).
    """

    def __init__(
        self,
        *,
        timeout: float,
        max_connections: int,
        allow_private: bool = False,
        clock: Clock | None = None,
        links: ActionLinks | None = None,
    ) -> None:
        self._clock = clock or SystemClock()
        self._links = links
        self._timeout = timeout
        self._max_connections = max_connections
        self._allow_private = allow_private
        self._keys: dict[str, bytes] = {}  # secret -> signing key, decoded once
        self._session: aiohttp.ClientSession | None = None  # made in the event loop

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            resolver = GuardedResolver(allow_private=self._allow_private)
            self._session = http_session(self._max_connections, resolver=resolver)
        return self._session

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        url = destination.address["url"]
        refused = refused_url(url, allow_private=self._allow_private, what="webhook URL")
        if refused is not None:
            return DeliveryResult.failed(refused)
        body = _body(firing, self._links)
        timestamp = int(self._clock.now().timestamp())
        headers = {
            "content-type": "application/json",
            "webhook-id": firing.id,
            "webhook-timestamp": str(timestamp),
        }
        key = self._key(destination.secret)
        if key is not None:
            headers["webhook-signature"] = sign(key, firing.id, timestamp, body)
        limit = aiohttp.ClientTimeout(total=min(time_limit, self._timeout))
        try:
            async with self._client().post(
                url, data=body, headers=headers, timeout=limit, allow_redirects=False
            ) as response:
                status = response.status
                answer = await response.read()  # read whole, so the connection is reused
                return _classify(status, response.headers, answer)
        except TimeoutError:
            return DeliveryResult.retry("timeout")
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as error:
            return DeliveryResult.failed(f"bad webhook URL: {outside_text(error)}")
        except aiohttp.ClientError as error:
            policy = refused_by_policy(error)
            if policy is not None:
                return DeliveryResult.failed(outside_text(policy))
            return DeliveryResult.retry(
                f"connection error: {type(error).__name__}: {outside_text(error)}"
            )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _key(self, secret: str | None) -> bytes | None:
        if secret is None:
            return None
        key = self._keys.get(secret)
        if key is None:
            if len(self._keys) > 10_000:
                self._keys.clear()
            key = self._keys[secret] = secret_key(secret)
        return key


def _classify(status: int, headers: Mapping[str, str], answer: bytes) -> DeliveryResult:
    if 200 <= status < 300:
        message_id = headers.get("x-message-id")
        return DeliveryResult.sent(outside_text(message_id, MAX_ID) if message_id else None)
    error = f"HTTP {status}: {outside_text(answer)}".rstrip(": ")
    if status == 410:
        return DeliveryResult.destination_gone(f"{error} (endpoint disabled)")
    if status in (408, 429) or status >= 500:
        retry_after = parse_retry_after(headers.get("retry-after"))
        return DeliveryResult.retry(error, retry_after)
    return DeliveryResult.failed(error)


def _body(firing: Firing, links: ActionLinks | None = None) -> bytes:
    body: dict[str, Any] = {
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
    if links is not None:  # for a receiver that shows the ring to a person (a chat bot)
        body["actions"] = links.of(firing).offered()
    return orjson.dumps(body)


def _utc(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # "²" is a digit to Python, not to float()
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())

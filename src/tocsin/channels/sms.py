"""The `sms` channel: a ring as a text message, through Twilio's Messages API or a gateway
that speaks it (`POST /2010-04-01/Accounts/{sid}/Messages.json`, form-encoded, basic auth).

`ValidityPeriod` is the time left to the firing's deadline, so the provider drops a message
it could only deliver stale. Answers are classified by HTTP status and Twilio's error code:
429/5xx retry (honouring `Retry-After`), 401/403 fail as a configuration error, 21610 (the
recipient replied STOP) fails with the number gone, any other 4xx fails.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
from pydantic import Field, SecretStr

from tocsin import __version__
from tocsin.actions import ActionLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.sessions import trusting
from tocsin.channels.webhook import parse_retry_after
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outside import MAX_ID, outside_text
from tocsin.settings_core import CaFile, CoreSettings

KIND = Channel.SMS
ENABLED_BY = (
    "TOCSIN_SMS_ACCOUNT_SID, TOCSIN_SMS_AUTH_TOKEN and TOCSIN_SMS_FROM "
    "(or TOCSIN_SMS_MESSAGING_SERVICE_SID)"
)

FIELDS = frozenset({"number"})
E164 = re.compile(r"\+[1-9][0-9]{7,14}")  # `+`, then 8 to 15 ASCII digits, the first not 0
SEPARATORS = str.maketrans("", "", " -.()")  # how people write numbers: +1 (415) 555-0100
MAX_VALIDITY = 36_000  # seconds: Twilio refuses a ValidityPeriod outside 1..36,000 (21624)
MAX_BODY = 1_600  # characters: Twilio refuses a longer body (21617)
# Twilio error codes that mean the number itself will not take messages from us until its
# owner acts: 21610, "Attempt to send to unsubscribed recipient" (they replied STOP).
GONE_CODES = frozenset({21610})
CONFIG_HINT = "check TOCSIN_SMS_ACCOUNT_SID and TOCSIN_SMS_AUTH_TOKEN"


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`{"number": …}` in E.164 (`+14155550100`); spaces, dots, dashes and brackets that
    people write numbers with are dropped first."""
    for name in fields:
        if name not in FIELDS:
            raise InvalidInput(name, "unknown field of an sms contact (it has `number`)")
    value = fields.get("number")
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("number", "required: a phone number in E.164, like +14155550100")
    number = value.strip().translate(SEPARATORS)
    if not E164.fullmatch(number):
        raise InvalidInput(
            "number",
            "not an E.164 number: `+`, then 8 to 15 digits, the first not 0 "
            "(the country code first, like +14155550100)",
        )
    return {"number": number}


class SmsSettings(CoreSettings):
    """The `sms` channel's (a Twilio-compatible Messages API): on when
    TOCSIN_SMS_ACCOUNT_SID, TOCSIN_SMS_AUTH_TOKEN and one of TOCSIN_SMS_FROM /
    TOCSIN_SMS_MESSAGING_SERVICE_SID are set."""

    sms_base_url: str = Field(
        default="https://api.twilio.com",
        description="The Messages API's origin; a Twilio-compatible gateway's to use another.",
    )
    sms_account_sid: str | None = Field(default=None, description="Account SID (`AC…`).")
    sms_auth_token: SecretStr | None = Field(default=None, description="The account's auth token.")
    sms_from: str | None = Field(default=None, description="Sending number, E.164 (`+1…`).")
    sms_messaging_service_sid: str | None = Field(
        default=None, description="Messaging Service SID (`MG…`), sent instead of From."
    )
    sms_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Longest one request may take (less near the deadline)."
    )
    sms_ca_file: CaFile = Field(
        default=None,
        description="CA bundle (PEM) to verify the gateway at TOCSIN_SMS_BASE_URL with instead "
        "of the system's: for one whose certificate comes from a private CA.",
    )


def build(
    settings: SmsSettings, clock: Clock, links: ActionLinks | None = None
) -> SmsSender | None:
    """The SMS sender, or None when no TOCSIN_SMS_* credential is set. A text carries no
    action links, `links` or not: a link would take most of the one segment a ring is
    (docs/channels.md#sms).

    Raises ValueError for a half-done configuration (a SID without its token, no sender),
    so a server does not start believing it can send texts it cannot.
    """
    sid, token = settings.sms_account_sid, settings.sms_auth_token
    senders = {"From": settings.sms_from, "MessagingServiceSid": settings.sms_messaging_service_sid}
    if not sid and token is None and not any(senders.values()):
        return None
    missing = [
        name
        for name, value in (("TOCSIN_SMS_ACCOUNT_SID", sid), ("TOCSIN_SMS_AUTH_TOKEN", token))
        if not value
    ]
    if not any(senders.values()):
        missing.append("TOCSIN_SMS_FROM or TOCSIN_SMS_MESSAGING_SERVICE_SID")
    if missing or sid is None or token is None:
        raise ValueError(f"the sms channel needs {ENABLED_BY}: {', '.join(missing)} not set")
    if not settings.sms_base_url.startswith(("https://", "http://")):
        raise ValueError("TOCSIN_SMS_BASE_URL must be an http(s):// URL")
    return SmsSender(
        base_url=settings.sms_base_url,
        account_sid=sid,
        auth_token=token,
        sender={name: value for name, value in senders.items() if value},
        timeout=settings.sms_timeout_seconds,
        max_connections=settings.delivery_concurrency,
        clock=clock,
        tls=trusting(settings.sms_ca_file),
    )


class SmsSender(DestinationSender):
    """Posts each ring to the Messages API over one pool of keep-alive HTTP connections
    (aiohttp, as the webhook channel: see docs/channels.md)."""

    def __init__(
        self,
        *,
        base_url: str,
        account_sid: str,
        auth_token: SecretStr,
        sender: Mapping[str, str],
        timeout: float,
        max_connections: int,
        clock: Clock,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._url = f"{base_url.rstrip('/')}/2010-04-01/Accounts/{quote(account_sid)}/Messages.json"
        self._authorization = aiohttp.encode_basic_auth(account_sid, auth_token.get_secret_value())
        self._sender = dict(sender)
        self._timeout = timeout
        self._max_connections = max_connections
        self._clock = clock
        self._tls = tls  # None: the system's CAs
        self._session: aiohttp.ClientSession | None = None  # made in the event loop

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections, ssl=self._tls or True),
                headers={
                    "authorization": self._authorization,
                    "user-agent": f"tocsin/{__version__}",
                },
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        number = destination.address.get("number")
        if not number:
            return DeliveryResult.failed("the sms contact has no number")
        validity = int((firing.deadline - self._clock.now()).total_seconds())
        if validity < 1:
            return DeliveryResult.failed("not sent: less than 1 s left to the deadline")
        form = {
            "To": number,
            **self._sender,
            "Body": firing.text[:MAX_BODY],
            "ValidityPeriod": str(min(validity, MAX_VALIDITY)),
        }
        limit = aiohttp.ClientTimeout(total=min(time_limit, self._timeout))
        try:
            async with self._client().post(
                self._url,
                data=form,
                headers={"Idempotency-Key": idempotency_key(firing, destination)},
                timeout=limit,
                allow_redirects=False,
            ) as response:
                answer = await response.read()  # read whole, so the connection is reused
                return classify(response.status, response.headers, answer)
        except TimeoutError:
            return DeliveryResult.retry(f"timeout after {limit.total:g} s")
        except aiohttp.ClientConnectorCertificateError as error:
            return DeliveryResult.retry(
                f"{outside_text(error)} (for a private CA set TOCSIN_SMS_CA_FILE)"
            )
        except aiohttp.ClientError as error:
            return DeliveryResult.retry(
                f"connection error: {type(error).__name__}: {outside_text(error)}"
            )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def idempotency_key(firing: Firing, destination: Destination) -> str:
    """One key per (firing, number): the firing's identity alone would let a gateway that
    honours the key drop the ring to the owner's second phone as a repeat of the first.
    Letters, digits, `-` and `:` only, the set such gateways accept."""
    return f"{firing.id}:{destination.id}".replace(".", "-")


def classify(status: int, headers: Mapping[str, str], answer: bytes) -> DeliveryResult:
    """What the Messages API's answer comes to (see the module's docstring)."""
    if 200 <= status < 300:
        sid = _json(answer).get("sid")
        return DeliveryResult.sent(
            outside_text(sid, MAX_ID) if isinstance(sid, str) and sid else None
        )
    code, message = _twilio_error(answer)
    error = f"HTTP {status}" + (f", Twilio error {code}" if code else "") + f": {message}"
    if status in (401, 403):
        return DeliveryResult.failed(
            f"the SMS gateway refused our credentials ({error}): " + CONFIG_HINT
        )
    if status == 404:
        return DeliveryResult.failed(
            f"{error}: check TOCSIN_SMS_BASE_URL and TOCSIN_SMS_ACCOUNT_SID"
        )
    if status in (408, 429) or status >= 500:
        return DeliveryResult.retry(error, parse_retry_after(headers.get("retry-after")))
    if code in GONE_CODES:
        return DeliveryResult.destination_gone(f"{error} (the recipient opted out)")
    return DeliveryResult.failed(error)


def _twilio_error(answer: bytes) -> tuple[int | None, str]:
    """Twilio's error body: `{"code": 21211, "message": "…", "more_info": …, "status": 400}`."""
    body = _json(answer)
    code = body.get("code")
    message = body.get("message")
    text = outside_text(message if isinstance(message, str) else answer)
    return (code if isinstance(code, int) else None), text


def _json(answer: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return {}
    return body if isinstance(body, dict) else {}

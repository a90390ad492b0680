"""The `email` channel: a ring as a plain-text + HTML message over SMTP, on kept connections.

The `Message-ID` is `<{firing id}@{the sender's domain}>`: every attempt of one firing carries
the same one, so a mailbox (or a person) that sees a repeat can tell it is the same message.
SMTP answers classify as the protocol means them: 4xx (and lost connections, timeouts) are
transient, retried; 5xx are permanent, failed. A 5xx on the recipient ("550 no such user") is
failed but never `gone`: see docs/channels.md, "Why a refused address is not disabled".
"""

from __future__ import annotations

import asyncio
import binascii
import email.utils
import html
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.base64mime import header_encode
from functools import lru_cache
from typing import Any, Literal

import aiosmtplib
from email_validator import EmailNotValidError, validate_email
from pydantic import Field, SecretStr

from tocsin.actions import ActionLinks, RingLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outside import outside_text
from tocsin.settings_core import CaFile, CoreSettings

KIND = Channel.EMAIL
ENABLED_BY = "TOCSIN_SMTP_HOST and TOCSIN_SMTP_FROM"

FIELDS = frozenset({"address"})
SUBJECT_LENGTH = 120  # characters of the reminder text in the Subject; the body has it all
# A kept connection idle longer than this is closed rather than reused: servers drop idle
# clients (RFC 5321 asks for at least 5 minutes; many hosted relays cut sooner), and a dead
# connection costs a round trip to find out.
IDLE_SECONDS = 60.0
DEFAULT_PORTS = {"starttls": 587, "implicit": 465, "none": 25}
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # Unicode's Cc
PLAIN_SUBJECT = 78 - len("Subject: ")
ENCODED_WORD_BYTES = 42  # base64: 56 characters; `Subject: =?utf-8?b?…?=` is then 77 long
# Both parts are quoted-printable, which writes every `=` as `=3D`: the boundary can then
# start with `=_` and be the firing's own (not a random one), and still never occur in a
# part. RFC 3834's `Auto-Submitted` keeps vacation responders and auto-replies away.
MESSAGE = (
    "From: {sender}\r\n"
    "To: {recipient}\r\n"
    "Subject: {subject}\r\n"
    "Date: {date}\r\n"
    "Message-ID: <{id}@{domain}>\r\n"
    "X-Tocsin-Firing: {id}\r\n"
    "Auto-Submitted: auto-generated\r\n"
    "MIME-Version: 1.0\r\n"
    'Content-Type: multipart/alternative;\r\n boundary="=_tocsin_{id}"\r\n'
    "\r\n"
    "--=_tocsin_{id}\r\n"
    'Content-Type: text/plain; charset="utf-8"\r\n'
    "Content-Transfer-Encoding: quoted-printable\r\n"
    "\r\n"
    "{text}\r\n"
    "--=_tocsin_{id}\r\n"
    'Content-Type: text/html; charset="utf-8"\r\n'
    "Content-Transfer-Encoding: quoted-printable\r\n"
    "\r\n"
    "{html}\r\n"
    "--=_tocsin_{id}--\r\n"
)


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`{"address": …}`: an RFC 5322 addr-spec (checked by email-validator, no DNS), kept in
    its normalised form (the domain lower-cased and in Unicode). The local part must be
    ASCII: a Unicode one (RFC 6531) would need every relay on the way to speak SMTPUTF8."""
    for name in fields:
        if name not in FIELDS:
            raise InvalidInput(name, "unknown field of an email contact (it has `address`)")
    value = fields.get("address")
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("address", "required: an email address, like ada@example.com")
    try:
        valid = validate_email(
            value.strip(), check_deliverability=False, allow_smtputf8=False, strict=True
        )
    except EmailNotValidError as error:
        raise InvalidInput("address", str(error)) from None
    return {"address": valid.normalized}


class EmailSettings(CoreSettings):
    """The `email` channel's (SMTP): on when TOCSIN_SMTP_HOST and TOCSIN_SMTP_FROM are set."""

    smtp_host: str | None = Field(default=None, description="The SMTP server (submission).")
    smtp_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Default: 587 with `starttls`, 465 with `implicit`, 25 with `none`.",
    )
    smtp_tls: Literal["starttls", "implicit", "none"] = Field(
        default="starttls",
        description="`starttls` (upgrade, required), `implicit` (TLS from the first byte) "
        "or `none` (plain text: only for a relay on the same host).",
    )
    smtp_username: str | None = Field(default=None, description="AUTH user name, if any.")
    smtp_password: SecretStr | None = Field(default=None, description="AUTH password.")
    smtp_from: str | None = Field(
        default=None,
        description="The sender: `alerts@example.com` or `Tocsin <alerts@example.com>`; its "
        "domain ends every Message-ID.",
    )
    smtp_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Longest one send may take (less near the deadline)."
    )
    smtp_pool: int = Field(
        default=4, ge=1, description="SMTP connections kept open and reused across sends."
    )
    smtp_ca_file: CaFile = Field(
        default=None, description="PEM file of the CA(s) to trust instead of the system's."
    )


def build(
    settings: EmailSettings, clock: Clock, links: ActionLinks | None = None
) -> EmailSender | None:
    """The email sender, or None without TOCSIN_SMTP_HOST and TOCSIN_SMTP_FROM; with
    `links`, each message carries its ring's Done and Snooze links.

    Raises ValueError for a half-done configuration (one of the two without the other, a
    user name without a password, an unusable sender address), so a server does not start
    believing it can send mail it cannot.
    """
    if not settings.smtp_host and not settings.smtp_from:
        return None
    if not settings.smtp_host or not settings.smtp_from:
        missing = "TOCSIN_SMTP_FROM" if settings.smtp_host else "TOCSIN_SMTP_HOST"
        raise ValueError(f"the email channel needs {ENABLED_BY}: {missing} is not set")
    if (settings.smtp_username is None) != (settings.smtp_password is None):
        raise ValueError("TOCSIN_SMTP_USERNAME and TOCSIN_SMTP_PASSWORD go together")
    server = SmtpServer.from_settings(settings)
    return EmailSender(
        pool=ConnectionPool(server.connect, size=settings.smtp_pool),
        sender=sender_identity(settings.smtp_from),
        timeout=settings.smtp_timeout_seconds,
        links=links,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Sender:
    """Who the messages are from: the `From` header, the envelope address, the Message-ID
    domain."""

    header: str
    address: str
    domain: str


def sender_identity(value: str) -> Sender:
    """`TOCSIN_SMTP_FROM` (`alerts@example.com` or `Tocsin <alerts@example.com>`) taken apart;
    ValueError when it holds no usable address."""
    try:
        valid = validate_email(value, check_deliverability=False, allow_display_name=True)
    except EmailNotValidError as error:
        raise ValueError(f"TOCSIN_SMTP_FROM is not a usable address: {error}") from None
    if valid.ascii_email is None:
        raise ValueError("TOCSIN_SMTP_FROM needs an ASCII local part (it is every envelope's)")
    name = valid.display_name
    header = (
        email.utils.formataddr((name, valid.ascii_email), charset="utf-8")
        if name
        else valid.ascii_email
    )
    return Sender(header=header, address=valid.ascii_email, domain=valid.ascii_domain)


@dataclass(frozen=True, kw_only=True, slots=True)
class SmtpServer:
    """How to reach and log in to the SMTP server; `connect` opens one ready connection."""

    host: str
    port: int
    tls: str
    username: str | None
    password: str | None
    tls_context: ssl.SSLContext | None
    timeout: float

    @classmethod
    def from_settings(cls, settings: EmailSettings) -> SmtpServer:
        assert settings.smtp_host is not None
        password = settings.smtp_password
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port or DEFAULT_PORTS[settings.smtp_tls],
            tls=settings.smtp_tls,
            username=settings.smtp_username,
            password=password.get_secret_value() if password is not None else None,
            tls_context=(
                None
                if settings.smtp_tls == "none"
                else ssl.create_default_context(cafile=settings.smtp_ca_file)
            ),
            timeout=settings.smtp_timeout_seconds,
        )

    async def connect(self) -> aiosmtplib.SMTP:
        """A connection that said hello, upgraded to TLS as set and logged in."""
        smtp = aiosmtplib.SMTP(
            hostname=self.host,
            port=self.port,
            username=self.username,
            password=self.password,
            use_tls=self.tls == "implicit",
            # STARTTLS is required, not tried: a server that stops offering it (or a
            # man in the middle who strips it) must not get the password in clear.
            start_tls=self.tls == "starttls",
            tls_context=self.tls_context,
            timeout=self.timeout,
        )
        await smtp.connect()
        return smtp


class ConnectionPool:
    """At most `size` SMTP connections, each carrying one transaction at a time, kept open
    between sends. Opening one costs a TCP and TLS handshake, EHLO and AUTH: several round
    trips that a kept connection skips (see docs/channels.md for what it is worth)."""

    def __init__(self, connect: Callable[[], Awaitable[aiosmtplib.SMTP]], *, size: int) -> None:
        self._connect = connect
        self._slots = asyncio.Semaphore(size)
        self._idle: list[tuple[aiosmtplib.SMTP, float]] = []  # (connection, idle since)

    async def send(self, sender: str, recipient: str, message: bytes) -> str:
        """Send `message` on a kept or new connection; the server's reply to the data."""
        async with self._slots:
            kept = self._take_idle()
            if kept is not None:
                try:
                    return await self._send_on(kept, sender, recipient, message)
                except aiosmtplib.SMTPServerDisconnected:
                    pass  # the server closed it while it was idle: once more on a new one
            return await self._send_on(await self._connect(), sender, recipient, message)

    async def close(self) -> None:
        while self._idle:
            self._idle.pop()[0].close()

    async def _send_on(
        self,
        smtp: aiosmtplib.SMTP,
        sender: str,
        recipient: str,
        message: bytes,
    ) -> str:
        try:
            _, reply = await smtp.sendmail(sender, [recipient], message)
        except (aiosmtplib.SMTPResponseException, aiosmtplib.SMTPRecipientsRefused):
            self._keep(smtp)  # a refusal: aiosmtplib reset the envelope, the line is sound
            raise
        except BaseException:
            # A timeout, a cancel or a lost line mid-transaction: what the server saw is
            # unknown, so the connection is not used again.
            smtp.close()
            raise
        self._keep(smtp)
        return reply

    def _keep(self, smtp: aiosmtplib.SMTP) -> None:
        if smtp.is_connected:
            self._idle.append((smtp, time.monotonic()))

    def _take_idle(self) -> aiosmtplib.SMTP | None:
        now = time.monotonic()
        while self._idle:
            smtp, since = self._idle.pop()  # the most recently used: the likeliest alive
            if smtp.is_connected and now - since < IDLE_SECONDS:
                return smtp
            smtp.close()
        return None


class EmailSender(DestinationSender):
    """Sends each ring to one address as one message, through the connection pool."""

    def __init__(
        self,
        *,
        pool: ConnectionPool,
        sender: Sender,
        timeout: float,
        links: ActionLinks | None = None,
    ) -> None:
        self._pool = pool
        self._sender = sender
        self._timeout = timeout
        self._links = links

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        address = destination.address.get("address")
        if not address:
            return DeliveryResult.failed("the email contact has no address")
        recipient = envelope_address(address)
        if recipient is None:
            return DeliveryResult.failed(f"not a deliverable address: {address!r}")
        links = self._links.of(firing) if self._links is not None else None
        message = render(firing, self._sender, recipient, links)
        limit = min(time_limit, self._timeout)
        try:
            async with asyncio.timeout(limit):
                reply = await self._pool.send(self._sender.address, recipient, message)
        except Exception as error:  # every failure is classified, none escapes
            return classify(error, limit)
        return DeliveryResult.sent(outside_text(reply) or None)

    async def close(self) -> None:
        await self._pool.close()


def render(firing: Firing, sender: Sender, recipient: str, links: RingLinks | None = None) -> bytes:
    """The message as sent: the same firing always gives the same bytes (its links too).

    One fixed shape (multipart/alternative, a text and an HTML part), so it is written from
    a template, with the stdlib's encoders for what needs encoding: the Subject (RFC 2047,
    folded), the parts (quoted-printable, binascii). The stdlib's message classes spend their
    time re-folding every header: `EmailMessage` took 1.4 ms a message here, compat32's
    `MIMEMultipart` 0.24 ms, this 0.04 ms (see docs/channels.md). Every value put in a
    header is ASCII without line breaks by construction (validated addresses, the firing id,
    an encoded Subject).
    """
    return MESSAGE.format(
        sender=sender.header,
        recipient=recipient,
        subject=encoded_words(subject(firing.text)),
        # The ring's due time, not the sending time: a retry is then the same message, and
        # the mailbox sorts it where it belongs.
        date=email.utils.format_datetime(firing.due_at.astimezone(UTC)),
        id=firing.id,
        domain=sender.domain,
        text=_quoted_printable(text_body(firing, links)),
        html=_quoted_printable(html_body(firing, links)),
    ).encode("ascii")


def encoded_words(line: str) -> str:
    """The Subject's value as RFC 2047 has it: short ASCII as it is, anything else as
    `=?utf-8?b?…?=` words of at most 42 bytes of text (68 characters encoded), one to a
    folded line, so no line of the header passes RFC 5322's 78 characters."""
    if line.isascii() and len(line) <= PLAIN_SUBJECT:
        return line
    words: list[str] = []
    chunk, size = "", 0
    for char in line:  # a word ends between characters, never inside one's UTF-8 bytes
        width = len(char.encode())
        if size + width > ENCODED_WORD_BYTES:
            words.append(header_encode(chunk.encode(), "utf-8"))
            chunk, size = "", 0
        chunk += char
        size += width
    words.append(header_encode(chunk.encode(), "utf-8"))
    return "\r\n ".join(words)


def _quoted_printable(content: str) -> str:
    return binascii.b2a_qp(content.encode(), istext=True).decode("ascii")


def subject(text: str) -> str:
    """The reminder text on one line (a header holds no line break nor control character),
    cut short."""
    line = " ".join(CONTROL.sub(" ", text).split()) or "Reminder"
    return line if len(line) <= SUBJECT_LENGTH else line[: SUBJECT_LENGTH - 1] + "…"


def text_body(firing: Firing, links: RingLinks | None = None) -> str:
    body = f"{firing.text}\n\nDue {_due(firing)}.\n"
    if links is None:
        return body
    return f"{body}\nDone: {links.done}\nSnooze 10 minutes: {links.snooze}\n"


def html_body(firing: Firing, links: RingLinks | None = None) -> str:
    # Everything from the reminder is escaped: its text is the app's, not markup.
    text = html.escape(firing.text).replace("\n", "<br>\n")
    actions = ""
    if links is not None:  # links, not forms: a mail client posts nothing (the link's page does)
        actions = (
            f'<p><a href="{html.escape(links.done)}">Done</a> &middot; '
            f'<a href="{html.escape(links.snooze)}">Snooze 10 minutes</a></p>\n'
        )
    return (
        '<!DOCTYPE html>\n<html><body>\n<p style="font-size:1.25em">'
        f"{text}</p>\n<p>Due {html.escape(_due(firing))}.</p>\n{actions}</body></html>\n"
    )


def _due(firing: Firing) -> str:
    return firing.due_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@lru_cache(maxsize=4096)
def envelope_address(address: str) -> str | None:
    """The address as the server and the `To` header get it: an internationalised domain as
    IDNA (`xn--…`, which any server takes). None for anything `validate_contact` would not
    have stored: checked again (once per address, cached) because it goes into a header."""
    try:
        valid = validate_email(address, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError:
        return None
    return valid.ascii_email


def classify(error: Exception, limit: float) -> DeliveryResult:
    """What a failed send comes to: 4xx, lost connections and timeouts are worth another
    try; 5xx and configuration mistakes are not."""
    if isinstance(error, aiosmtplib.SMTPRecipientsRefused):
        refused = error.recipients[0]
        return _by_code(
            refused.code, f"recipient refused: {refused.code} {outside_text(refused.message)}"
        )
    if isinstance(error, aiosmtplib.SMTPAuthenticationError) and error.code >= 500:
        return DeliveryResult.failed(
            f"SMTP login refused ({error.code} {outside_text(error.message)}): "
            "check TOCSIN_SMTP_USERNAME and TOCSIN_SMTP_PASSWORD"
        )
    if isinstance(error, aiosmtplib.SMTPSenderRefused) and error.code >= 500:
        return DeliveryResult.failed(
            f"sender refused: {error.code} {outside_text(error.message)} (check TOCSIN_SMTP_FROM)"
        )
    if isinstance(error, aiosmtplib.SMTPResponseException):
        return _by_code(error.code, f"SMTP {error.code} {outside_text(error.message)}")
    if isinstance(error, TimeoutError):  # aiosmtplib's timeouts are TimeoutErrors too
        return DeliveryResult.retry(f"timeout after {limit:g} s")
    certificate = _certificate_error(error)
    if certificate is not None:
        return DeliveryResult.failed(
            f"the SMTP server's TLS certificate is not trusted ({outside_text(certificate)}); "
            "for a private CA set TOCSIN_SMTP_CA_FILE"
        )
    if isinstance(error, ConnectionError | OSError):
        return DeliveryResult.retry(
            f"connection error: {type(error).__name__}: {outside_text(error)}"
        )
    # The rest is a mismatch with the server (no STARTTLS offered, no AUTH, no SMTPUTF8 for
    # this address): trying again changes nothing until its configuration does.
    return DeliveryResult.failed(f"SMTP: {type(error).__name__}: {outside_text(error)}")


def _by_code(code: int, text: str) -> DeliveryResult:
    if 400 <= code < 500:
        return DeliveryResult.retry(text)
    return DeliveryResult.failed(text)


def _certificate_error(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate failure behind `error` (aiosmtplib wraps the handshake's in its own)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None

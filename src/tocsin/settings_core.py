"""The settings every process reads, and what each channel's settings are made of.

`CoreSettings` holds what is not a channel's: the database, the scheduler, delivery, the
API's limits, logging. Each channel module derives its own settings from it
(`tocsin.channels.email.EmailSettings`…), so that its `build` reads the shared ones too;
`tocsin.settings.Settings` puts them all together. The file checks (`ReadableFile`,
`CaFile`) are here for the channels' key and CA files.
"""

from __future__ import annotations

import ssl
import stat
from datetime import timedelta
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tocsin.errors import InvalidInput
from tocsin.ids import SHARDS
from tocsin.store.sqlite.engine import SqliteUrl
from tocsin.time.durations import parse_duration

DEFAULT_DATABASE_URL = "sqlite:///./tocsin.db"
# On SQLite one process holds every part, so more parts only mean more loaders reading and
# claiming through the one writer; on PostgreSQL the parts are what the workers share.
SQLITE_PARTS = 1
POSTGRES_PARTS = 16
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _readable_file(value: Any) -> Any:
    """A path setting's value: a file this process can read, or None when unset. Checked as
    the settings load, so that a wrong one stops every command saying so on one line, not
    the first one that opens it with a traceback."""
    if value is None or not isinstance(value, str | Path):
        return value  # None, or pydantic's own error for the type
    if not str(value).strip():
        raise ValueError("is empty: give the path of a file, or leave it unset")
    path = Path(value)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except OSError as error:
        raise ValueError(f"cannot be read ({error.strerror})") from None
    if stat.S_ISDIR(mode):
        raise ValueError("is a directory, not a file")
    if not stat.S_ISREG(mode):  # a FIFO would block the reader that opens it
        raise ValueError("is not a regular file")
    try:
        with path.open("rb"):
            pass
    except OSError as error:
        raise ValueError(f"cannot be read ({error.strerror})") from None
    return path


def _ca_file(value: Any) -> Any:
    """A CA-file setting's value: a readable file of PEM certificates TLS can trust."""
    path = _readable_file(value)
    if isinstance(path, Path):
        try:
            ssl.create_default_context(cafile=str(path))
        except ssl.SSLError:
            raise ValueError("holds no PEM certificate to trust") from None
    return path


# The types of path settings (see _readable_file and _ca_file).
ReadableFile = Annotated[Path | None, BeforeValidator(_readable_file)]
CaFile = Annotated[Path | None, BeforeValidator(_ca_file)]


class CoreSettings(BaseSettings):
    """What an operator can set that is not one channel's. Command-line flags override these
    per process. A secret kept as a plain string (other code reads it as such) is a field
    with `repr=False`: `tocsin config` masks it, as it masks every `SecretStr`."""

    model_config = SettingsConfigDict(env_prefix="TOCSIN_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="`sqlite:///path/to/file.db` or `postgresql://user@host/db`.",
    )
    database_acquire_timeout_seconds: float = Field(
        default=2.0,
        ge=0,
        description="PostgreSQL: how long a request to `tocsin api` or `tocsin serve` waits "
        "for one of its process's 10 pooled connections when all are busy before it is "
        "answered 503 with Retry-After, rather than queue for as long as commits are slow (0: "
        "as long as it takes). `tocsin worker` waits as long as it takes: no one waits on "
        "its answers, and failing would only make it retry.",
    )
    host: str = Field(
        default="127.0.0.1",
        description="The address `tocsin serve` and `tocsin api` listen on; anything but "
        "loopback needs an API key to exist.",
    )
    port: int = Field(default=8000, ge=0, le=65535, description="The port they listen on.")
    secret: str | None = Field(
        default=None,
        repr=False,
        description="Signs owner tokens; made once and kept in the database when unset.",
    )
    public_url: str | None = Field(
        default=None,
        description="Where people reach this server (`https://tocsin.example.com`): the "
        "address of the Done and Snooze links a ring's email or push carries. Unset, a "
        "server on loopback uses `http://<host>:<port>`, and elsewhere rings carry no links. "
        "Set it for `tocsin worker` too: the workers write the links (a worker has no address "
        "of its own: on loopback it assumes port 8000).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Encrypts the secrets kept in the database (webhook and owner-token "
        "signing secrets): keys from `tocsin keys secret-key`, comma-separated, the first "
        "seals and all open. On SQLite, when unset, the key file beside the database "
        "(`tocsin.db.key`, made by `tocsin serve` on loopback) is used.",
    )
    parts: int = Field(
        default=POSTGRES_PARTS,
        description="Scheduler parts per bucket; divides 1024. Default: 16 on PostgreSQL, "
        "1 on SQLite.",
    )
    lease_seconds: float = Field(default=10.0, gt=0, description="Scheduler part lease time.")
    sweep_seconds: float = Field(default=2.0, gt=0, description="How often held parts are swept.")
    delivery_concurrency: int = Field(
        default=256, ge=1, description="Sends one worker keeps in flight at once."
    )
    max_attempts: int = Field(
        default=100,
        ge=1,
        description="A safety cap on delivery attempts per firing: retries end at the "
        "firing's deadline (due + freshness), which needs ~70 tries at most.",
    )
    retain_firings: timedelta = Field(
        default=timedelta(days=30),
        description="How long rings (firings, with their attempts) and finished reminders "
        "are kept before the workers delete them: `30d`, `12w`, `2160h` (1 day to 10 years).",
    )
    retention_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="The lease on the retention chore (one worker at a time deletes old "
        "rows). Its holder looks for old rows and renews every half of it, the other "
        "workers look every half too: a standby takes over within 1.5 times this after the "
        "holder vanished.",
    )
    feed_heartbeat_seconds: float = Field(
        default=15.0,
        gt=0,
        description="How often an idle in-app feed connection gets a comment line, so that "
        "proxies and load balancers (idle timeouts of 30-60 s) keep it open; also how often "
        "an open one checks that its credential was not revoked.",
    )
    max_feed_connections_per_owner: int = Field(
        default=20,
        ge=0,
        description="In-app feed connections one owner may hold open on each API process "
        "(pages, tabs and app readers together; one more is a 429; 0: no cap).",
    )
    rate_limit_key_per_second: float = Field(
        default=200.0,
        ge=0,
        description="Requests a second one API key may make on average (twice that at once; "
        "0: no limit). Bulk imports use `POST /v1/reminders:batch`: 1,000 a request.",
    )
    rate_limit_owner_per_second: float = Field(
        default=20.0, ge=0, description="The same for one owner token (a person's page)."
    )
    rate_limit_auth_failures_per_minute: float = Field(
        default=30.0,
        ge=0,
        description="Failed authentications one client address may make a minute (half that "
        "at once) before its requests are refused with 429 until it has waited.",
    )
    max_reminders_per_owner: int = Field(
        default=10_000,
        ge=0,
        description="Pending reminders one app may keep for one owner (and an owner for "
        "himself); one more is refused with 409 (0: no cap).",
    )
    max_contacts_per_owner: int = Field(
        default=100,
        ge=0,
        description="Contacts one app may save for one owner (and an owner for himself): a "
        "ring goes to every one of its kind, so this bounds one ring's sends (0: no cap).",
    )
    max_places_per_owner: int = Field(
        default=100,
        ge=0,
        description="Places one app may save for one owner (and an owner for himself); one "
        "more is refused with 409 (0: no cap). iOS watches 20 regions an app.",
    )
    allow_private_urls: bool = Field(
        default=False,
        description="Let webhook and other outbound URLs (Apprise's too) reach loopback, "
        "private, link-local and metadata addresses (a receiver on the same network), and "
        "accept the Apprise services whose connections Tocsin cannot check; refused by default.",
    )
    trusted_proxies: str | None = Field(
        default=None,
        description="The reverse proxies and load balancers in front of the API, as "
        "addresses or networks, comma-separated (`10.0.0.5,10.1.0.0/16`): on a connection "
        "from one of them the client's address is read from TOCSIN_FORWARDED_HEADER (for the "
        "failed-authentication limit), and the connection is not counted against "
        "TOCSIN_CONNECTIONS_PER_ADDRESS. Unset: no one's header is believed, loopback's "
        "neither.",
    )
    forwarded_header: Literal["x-forwarded-for", "forwarded"] = Field(
        default="x-forwarded-for",
        description="The header the trusted proxies write the client's address in: "
        "`x-forwarded-for`, or `forwarded` (RFC 7239, its `for=`); the other is never read. "
        "The client is the right-most address in it that is not a trusted proxy.",
    )
    client_header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How long a client has to send a request's line and headers, from when "
        "it connects (or from its first byte after an answer); then its connection is closed.",
    )
    client_body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long a client has to send a request's body, from the end of its "
        "headers; then its connection is closed. An answer still streaming (the in-app "
        "feed) is not limited.",
    )
    connections_per_address: int = Field(
        default=100,
        ge=0,
        description="Connections one client address may hold open at once to one API "
        "process; more are closed as they open (0: no cap). Trusted proxies are not capped.",
    )
    log_level: str = Field(
        default="INFO", description="`DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`."
    )
    log_format: Literal["kv", "json"] = Field(
        default="kv", description="`kv` (key=value lines) or `json` (one object a line)."
    )

    @model_validator(mode="before")
    @classmethod
    def _parts_for_the_backend(cls, data: Any) -> Any:
        """`parts` when not given: SQLITE_PARTS on SQLite, POSTGRES_PARTS otherwise."""
        if isinstance(data, dict) and data.get("parts") is None:
            url = str(data.get("database_url") or DEFAULT_DATABASE_URL)
            if url.startswith("sqlite:"):
                return {**data, "parts": SQLITE_PARTS}
        return data

    @field_validator("database_url")
    @classmethod
    def _database_file_can_be_made(cls, value: str) -> str:
        if value.startswith("sqlite:"):
            try:
                path = Path(SqliteUrl.parse(value).path)
            except ValueError as error:
                raise ValueError(str(error).removesuffix(f": {value!r}")) from None
            if path.is_dir():
                raise ValueError(f"{path} is a directory, not a database file")
            if not path.parent.is_dir():
                raise ValueError(f"there is no directory {path.parent} for the database file")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url_is_an_origin(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http or https URL (https://tocsin.example.com)")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("must be a plain address, without a query, fragment or credentials")
        return value.strip().rstrip("/")

    @field_validator("parts")
    @classmethod
    def _parts_divide_shards(cls, value: int) -> int:
        if value <= 0 or SHARDS % value:
            raise ValueError(f"must divide {SHARDS} (1, 2, 4, … 1024)")
        return value

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return value.upper()

    @field_validator("retain_firings", mode="before")
    @classmethod
    def _retention_is_a_duration(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                seconds = parse_duration(
                    value, field="retain_firings", minimum=86_400, maximum=3650 * 86_400
                )
            except InvalidInput as error:
                raise ValueError(error.message) from None
            return timedelta(seconds=seconds)
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_addresses(cls, value: str | None) -> str | None:
        _networks(value or "")
        return value

    @field_validator("forwarded_header", mode="before")
    @classmethod
    def _header_names_any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @property
    def links_base_url(self) -> str | None:
        """Where the action links of rings point: `public_url`, else this server's own
        address when it listens on loopback only (`make run`), else None (no links)."""
        if self.public_url is not None:
            return self.public_url
        if self.host == "localhost":
            return f"http://localhost:{self.port}"
        try:
            address = ip_address(self.host.strip("[]"))
        except ValueError:
            return None
        if not address.is_loopback:
            return None
        host = f"[{address}]" if address.version == 6 else str(address)
        return f"http://{host}:{self.port}"

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql://", "postgres://"))

    @property
    def trusted_proxy_networks(self) -> tuple[IPv4Network | IPv6Network, ...]:
        return _networks(self.trusted_proxies or "")


def _networks(text: str) -> tuple[IPv4Network | IPv6Network, ...]:
    """The addresses and networks of a comma-separated list (an address: a network of one)."""
    networks = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        try:
            networks.append(ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(
                f"{entry!r} is not an IP address or network (10.0.0.5, 10.1.0.0/16, fd00::/8)"
            ) from None
    return tuple(networks)


class SettingsInvalid(Exception):
    """A setting that cannot be used: the message names it (`TOCSIN_PARTS: …`) on one line."""

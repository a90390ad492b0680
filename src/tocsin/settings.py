"""Settings: one typed class read from `TOCSIN_*` environment variables."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tocsin.errors import InvalidInput
from tocsin.ids import SHARDS
from tocsin.outbound import check_url

DEFAULT_DATABASE_URL = "sqlite:///./tocsin.db"
# On SQLite one process holds every part, so more parts only mean more loaders reading and
# claiming through the one writer; on PostgreSQL the parts are what the workers share.
SQLITE_PARTS = 1
POSTGRES_PARTS = 16


class Settings(BaseSettings):
    """Everything an operator can set. Command-line flags override these per process."""

    model_config = SettingsConfigDict(env_prefix="TOCSIN_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="`sqlite:///path/to/file.db` or `postgresql://user@host/db`.",
    )
    host: str = "127.0.0.1"
    port: int = 8000
    secret: str | None = Field(
        default=None,
        description="Signs owner tokens; made once and kept in the database when unset.",
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
    delivery_concurrency: int = Field(default=256, ge=1)
    max_attempts: int = Field(default=8, ge=1)
    webhook_url: str | None = Field(
        default=None, description="Where webhook rings go when their app has no URL of its own."
    )
    webhook_secret: str | None = None
    webhook_timeout_seconds: float = 10.0
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
    allow_private_urls: bool = Field(
        default=False,
        description="Let webhook and other outbound URLs reach loopback, private, link-local "
        "and metadata addresses (a receiver on the same network); refused by default.",
    )
    log_level: str = "INFO"
    log_format: Literal["kv", "json"] = Field(
        default="kv", description="`kv` (key=value lines) or `json` (one object a line)."
    )

    @model_validator(mode="after")
    def _outbound_urls(self) -> Settings:
        if self.webhook_url is not None:
            try:
                check_url(self.webhook_url, allow_private=self.allow_private_urls)
            except InvalidInput as error:
                raise ValueError(f"TOCSIN_WEBHOOK_URL: {error.message}") from None
        return self

    @model_validator(mode="before")
    @classmethod
    def _parts_for_the_backend(cls, data: Any) -> Any:
        """`parts` when not given: SQLITE_PARTS on SQLite, POSTGRES_PARTS otherwise."""
        if isinstance(data, dict) and data.get("parts") is None:
            url = str(data.get("database_url") or DEFAULT_DATABASE_URL)
            if url.startswith("sqlite:"):
                return {**data, "parts": SQLITE_PARTS}
        return data

    @field_validator("parts")
    @classmethod
    def _parts_divide_shards(cls, value: int) -> int:
        if value <= 0 or SHARDS % value:
            raise ValueError(f"must divide {SHARDS} (1, 2, 4, … 1024)")
        return value

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql://", "postgres://"))

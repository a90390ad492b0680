"""Settings: one typed class read from `TOCSIN_*` environment variables."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tocsin.ids import SHARDS

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
    parts: int = Field(
        default=POSTGRES_PARTS,
        description="Scheduler parts per bucket; divides 1024. Default: 16 on PostgreSQL, "
        "1 on SQLite.",
    )
    lease_seconds: float = Field(default=10.0, gt=0, description="Scheduler part lease time.")
    sweep_seconds: float = Field(default=2.0, gt=0, description="How often held parts are swept.")
    delivery_concurrency: int = Field(default=256, ge=1)
    max_attempts: int = Field(
        default=100,
        ge=1,
        description="A safety cap on delivery attempts per firing: retries end at the "
        "firing's deadline (due + freshness), which needs ~70 tries at most.",
    )
    webhook_url: str | None = None
    webhook_secret: str | None = None
    webhook_timeout_seconds: float = 10.0
    log_level: str = "INFO"
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

    @field_validator("parts")
    @classmethod
    def _parts_divide_shards(cls, value: int) -> int:
        if value <= 0 or SHARDS % value:
            raise ValueError(f"must divide {SHARDS} (1, 2, 4, … 1024)")
        return value

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql://", "postgres://"))

"""Settings: one typed class read from `TOCSIN_*` environment variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tocsin.ids import SHARDS


class Settings(BaseSettings):
    """Everything an operator can set. Command-line flags override these per process."""

    model_config = SettingsConfigDict(env_prefix="TOCSIN_", extra="ignore")

    database_url: str = Field(
        default="sqlite:///./tocsin.db",
        description="`sqlite:///path/to/file.db` or `postgresql://user@host/db`.",
    )
    host: str = "127.0.0.1"
    port: int = 8000
    secret: str | None = Field(
        default=None,
        description="Signs owner tokens; made once and kept in the database when unset.",
    )
    parts: int = Field(default=16, description="Scheduler parts per bucket; divides 1024.")
    lease_seconds: float = Field(default=10.0, gt=0, description="Scheduler part lease time.")
    sweep_seconds: float = Field(default=2.0, gt=0, description="How often held parts are swept.")
    delivery_concurrency: int = Field(default=256, ge=1)
    max_attempts: int = Field(default=8, ge=1)
    webhook_url: str | None = None
    webhook_secret: str | None = None
    webhook_timeout_seconds: float = 10.0
    log_level: str = "INFO"
    log_format: Literal["kv", "json"] = Field(
        default="kv", description="`kv` (key=value lines) or `json` (one object a line)."
    )

    @field_validator("parts")
    @classmethod
    def _parts_divide_shards(cls, value: int) -> int:
        if value <= 0 or SHARDS % value:
            raise ValueError(f"must divide {SHARDS} (1, 2, 4, … 1024)")
        return value

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql://", "postgres://"))

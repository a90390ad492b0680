"""Settings: one typed class read from `TOCSIN_*` environment variables.

`Settings` is made of the core settings (`tocsin.settings_core`) and each channel's, which
its module owns (`tocsin.channels.ChannelSettings`): a channel's setting is added, or
changed, beside the code that reads it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from tocsin.channels import ChannelSettings
from tocsin.masking import masked
from tocsin.settings_core import SettingsInvalid

__all__ = ["Settings", "SettingsInvalid", "env_name", "is_secret", "load_settings"]


class Settings(ChannelSettings):
    """Everything an operator can set. Command-line flags override these per process."""


def load_settings(**overrides: Any) -> Settings:
    """The settings from the environment with `overrides` (command-line flags) on top, or
    `SettingsInvalid` saying which setting is wrong and why, every problem on one line."""
    try:
        return Settings(**overrides)
    except ValidationError as error:
        raise SettingsInvalid("; ".join(_problem(detail) for detail in error.errors())) from None


def env_name(field: str) -> str:
    """The environment variable a setting is read from."""
    return f"TOCSIN_{field.upper()}"


def is_secret(field: str) -> bool:
    """Whether a setting's value must never be shown (`tocsin config` masks it)."""
    info = Settings.model_fields[field]
    return not info.repr or "SecretStr" in str(info.annotation)


def _problem(detail: Any) -> str:
    message = str(detail["msg"]).removeprefix("Value error, ")
    if message.startswith("Input "):  # pydantic's own "Input should be …", mid-sentence here
        message = "i" + message[1:]
    if not detail["loc"]:  # a check across settings: its message names them
        return message
    given = detail.get("input")
    field = str(detail["loc"][0])
    shown = "" if isinstance(given, dict) or is_secret(field) else f" (got {given!r})"
    return masked(f"{env_name(field)}: {message}{shown}")

"""What each contact kind holds, by kind: each channel module's `validate_contact`.

A channel that sends to contacts exposes `KIND`, `ENABLED_BY` (the settings that enable it),
`validate_contact(fields)` (the contact's address fields as stored, or `InvalidInput` naming
the field at fault) and `build(settings, clock)` (its sender, or None when not configured).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from tocsin.domain import Channel
from tocsin.errors import InvalidInput

Validator = Callable[[Mapping[str, Any]], dict[str, str]]

MAX_URL = 2048


def validate_webhook_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """An owner's own webhook: `url`, http or https with a host."""
    url = _text(fields, "url", MAX_URL)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url", "must be an http:// or https:// URL with a host")
    return {"url": url}


def _text(fields: Mapping[str, Any], name: str, limit: int) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(name, "required, a non-empty string")
    if len(value) > limit:
        raise InvalidInput(name, f"at most {limit} characters")
    return value.strip()


VALIDATORS: dict[Channel, Validator] = {Channel.WEBHOOK: validate_webhook_contact}


def contact_kinds() -> Mapping[Channel, Validator]:
    """The kinds a contact may have, with their validators."""
    return VALIDATORS


def validate_contact(kind: Channel, fields: Mapping[str, Any]) -> dict[str, str]:
    """The address fields of a contact of `kind`; `InvalidInput` naming the field at fault."""
    validator = VALIDATORS.get(kind)
    if validator is None:
        known = ", ".join(sorted(k.value for k in VALIDATORS))
        raise InvalidInput("kind", f"not a kind of contact: one of {known}")
    return validator(fields)

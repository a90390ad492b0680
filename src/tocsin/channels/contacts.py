"""What each contact kind holds, by kind: each channel module's `validate_contact`.

A channel that sends to contacts exposes `KIND`, `ENABLED_BY` (the settings that enable it),
`validate_contact(fields)` (the contact's address fields as stored, or `InvalidInput` naming
the field at fault), its settings (`EmailSettings`…, part of `tocsin.channels.ChannelSettings`)
and `build(settings, clock)` (its sender from them, or None when not configured).
The webhook channel's contacts (an owner's own URL) are validated here, and `check_outbound`
holds what a contact makes the server call to the outbound URL policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tocsin.channels import CONTACT_MODULES, apprise
from tocsin.domain import Channel
from tocsin.errors import InvalidInput
from tocsin.outbound import check_url, http_host

Validator = Callable[[Mapping[str, Any]], dict[str, str]]

MAX_URL = 2048
# The contact fields that are URLs the server calls, by kind.
URL_FIELDS = {Channel.WEBHOOK: "url", Channel.WEBPUSH: "endpoint"}


def validate_webhook_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """An owner's own webhook: `url`, http or https with a host."""
    unknown = sorted(set(fields) - {"url"})
    if unknown:
        raise InvalidInput(unknown[0], "not a field of a webhook contact (it has `url`)")
    url = fields.get("url")
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("url", "required, a non-empty string")
    if len(url) > MAX_URL:
        raise InvalidInput("url", f"at most {MAX_URL} characters")
    http_host(url.strip(), field="url")
    return {"url": url.strip()}


VALIDATORS: dict[Channel, Validator] = {
    **{module.KIND: module.validate_contact for module in CONTACT_MODULES},
    Channel.WEBHOOK: validate_webhook_contact,
}


def validate_contact(kind: Channel, fields: Mapping[str, Any]) -> dict[str, str]:
    """The address fields of a contact of `kind`; `InvalidInput` naming the field at fault."""
    validator = VALIDATORS.get(kind)
    if validator is None:
        known = ", ".join(sorted(k.value for k in VALIDATORS))
        raise InvalidInput("kind", f"not a kind of contact: one of {known}")
    return validator(fields)


def check_outbound(kind: Channel, address: Mapping[str, str], *, allow_private: bool) -> None:
    """Holds what the server would call for a contact of `kind` to the outbound URL policy:
    a webhook's `url` and a Web Push `endpoint` as URLs, an Apprise URL by where its service
    connects; `InvalidInput` naming the field."""
    if kind is Channel.APPRISE:
        apprise.check_reach(address["url"], allow_private=allow_private)
    elif kind in URL_FIELDS:
        name = URL_FIELDS[kind]
        check_url(address[name], allow_private=allow_private, field=name)

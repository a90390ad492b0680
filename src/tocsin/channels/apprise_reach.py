"""Where an Apprise URL makes this server connect, held to the outbound URL policy
(`tocsin.outbound`) as a webhook's URL is.

Apprise URLs name the server in as many ways as there are services: `json://host/…`,
`ntfys://host/topic` and `gotifys://host/…` reach the URL's host, `ntfys://topic` reaches
ntfy.sh, `mailto://` the SMTP server Apprise picks for the address's domain (or `?smtp=`),
`tgram://…` always api.telegram.org, and some services build a host from other parts of
the URL. So the policy is applied twice:

- to the servers the URL names, as Apprise's own parse reads them, when the contact is
  saved and again at every send: the URL's host for a service whose URL has one (the
  plugin declares a `host` token), and the SMTP server an email URL reaches;
- to every address a notification connects to, as it resolves (`connections_checked`):
  fixed API hosts, hosts built from the URL, redirects, and a name that resolves to a
  private address at send time (DNS rebinding) included.

The second rests on how Python resolves: `requests` (every HTTP service) and `smtplib`
(email) call `socket.getaddrinfo` in the calling thread. A service whose plugin connects
some other way (its own sockets, an event loop, another library: rsyslog, IRC, XMPP, MQTT,
Growl, AMQP, SMPP…) cannot be judged, so it is refused unless TOCSIN_ALLOW_PRIVATE_URLS is
true, which lets any URL reach any host anyway.
"""

from __future__ import annotations

import functools
import inspect
import ipaddress
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from apprise import NotifyBase

from tocsin.outbound import RefusedAddress, is_public, refused_host

ALLOW = "TOCSIN_ALLOW_PRIVATE_URLS=true"

# Libraries whose connections resolve through socket.getaddrinfo in the calling thread.
_SEEN_TRANSPORTS = frozenset({"requests", "smtplib"})
# Modules a plugin could connect through without that: a socket's own connect() and sendto()
# resolve a name in C, an event loop resolves in another thread, ssl wraps its own sockets.
_UNSEEN_TRANSPORTS = frozenset({"socket", "asyncio", "selectors", "ssl"})
# Plugin attributes that name a server beyond the URL's host: the SMTP server an email URL
# reaches, as Apprise picked it (its table of providers, or `?smtp=`).
_SERVER_ATTRIBUTES = ("smtp_host",)


def refused(plugin: NotifyBase, *, allow_private: bool) -> str | None:
    """Why the policy refuses where `plugin` connects, judged from its URL (before any DNS),
    or None. The reason quotes no part of the URL: it usually carries a token."""
    if allow_private:
        return None
    service = plugin.service_name or "this service"
    kind: type = type(plugin)
    if not connections_seen(kind):
        return (
            f"Tocsin cannot check where {service} connects against the outbound URL policy: "
            f"allowed only with {ALLOW}"
        )
    if any(refused_host(host) is not None for host in servers(plugin)):
        return (
            f"{service} would connect to a host that is not public (this machine, a metadata "
            f"service, or a loopback, private, link-local or reserved address); set {ALLOW} "
            "to allow private hosts"
        )
    return None


def servers(plugin: NotifyBase) -> list[str]:
    """The servers `plugin`'s URL names: its host when the service's URL has one (Apprise's
    `host` token), and the SMTP server an email URL reaches."""
    named: list[Any] = [plugin.host] if "host" in plugin.template_tokens else []
    named += [getattr(plugin, name, None) for name in _SERVER_ATTRIBUTES]
    return [host for host in named if isinstance(host, str) and host]


@functools.cache
def connections_seen(plugin: type) -> bool:
    """Whether every connection `plugin` makes resolves where `connections_checked` sees it,
    by the modules its own classes import (NotifyBase's, shared by every plugin, imports
    asyncio for helpers the synchronous path never uses)."""
    mro = plugin.__mro__
    own = mro[: mro.index(NotifyBase)] if NotifyBase in mro else mro
    libraries = {
        value.__name__.partition(".")[0]
        for cls in own
        for value in vars(sys.modules[cls.__module__]).values()
        if inspect.ismodule(value)
    }
    return bool(libraries & _SEEN_TRANSPORTS) and not libraries & _UNSEEN_TRANSPORTS


@dataclass
class Check:
    """The connections of one notification: each one refused, for its result."""

    refused: list[str] = field(default_factory=list)


_CHECK: ContextVar[Check | None] = ContextVar("tocsin_apprise_check", default=None)
_resolve = socket.getaddrinfo


@contextmanager
def connections_checked(*, allow_private: bool) -> Iterator[Check]:
    """Every address that code in the block connects to through Python's resolver is held to
    the policy: names are resolved and only public addresses kept, and a host with none is
    refused (`RefusedAddress`, noted in the `Check`). Other threads are not affected, nor
    this one after the block."""
    check = Check()
    if allow_private:
        yield check
        return
    _wrap_the_resolver()
    token = _CHECK.set(check)
    try:
        yield check
    finally:
        _CHECK.reset(token)


def _wrap_the_resolver() -> None:
    # Apprise's plugins call requests.post and smtplib themselves: there is no session or
    # resolver to hand them. What they share is socket.getaddrinfo, wrapped here once; it
    # changes nothing outside a check.
    if socket.getaddrinfo is not _checked_getaddrinfo:
        socket.getaddrinfo = _checked_getaddrinfo


def _checked_getaddrinfo(
    host: bytes | str | None, port: bytes | str | int | None, *args: Any, **kwargs: Any
) -> list[Any]:
    check = _CHECK.get()
    if check is None:
        return _resolve(host, port, *args, **kwargs)
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host or ""
    reason = refused_host(name) if name else None
    found = [] if reason else _resolve(host, port, *args, **kwargs)
    allowed = [one for one in found if _public(one[4][0])]
    if not allowed:
        reason = reason or f"{name or 'this machine'} resolves to non-public addresses only"
        message = f"{reason}: refused by the outbound URL policy ({ALLOW} allows it)"
        check.refused.append(message)
        raise RefusedAddress(message)
    return allowed


def _public(address: object) -> bool:
    try:
        return is_public(ipaddress.ip_address(str(address)))
    except ValueError:
        return False

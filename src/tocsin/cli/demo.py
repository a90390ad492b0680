"""The sign-in link `tocsin serve` prints in loopback dev mode: the reminders page, signed in
as a demo owner, so that trying Tocsin needs no key and no token made by hand.

The token rides in the link's fragment (`/#token=…`), which a browser never sends to a
server; the page keeps it and takes it out of the address bar. Only in dev mode (loopback,
no API key yet), where anyone on this machine may call the API without a key anyway — and
signed as a dev-only token, so that it ends with dev mode: once an API key exists, or on a
server beyond loopback, it is refused, however long it had left. `tocsin keys revoke-owner
demo` ends it earlier, as any owner token.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tocsin.auth import is_loopback, owner_token_secret, sign_owner_token
from tocsin.settings import Settings
from tocsin.store.ports import AppStore

DEMO_OWNER = "demo"
DEMO_TOKEN_LIFETIME = timedelta(days=30)


async def demo_link(store: AppStore, settings: Settings) -> str | None:
    """The page's address with a demo owner's token, or None outside loopback dev mode."""
    if not is_loopback(settings.host) or await store.count_apps() > 0:
        return None
    secret = await owner_token_secret(store, settings.secret)
    token = sign_owner_token(
        DEMO_OWNER, expires=datetime.now(UTC) + DEMO_TOKEN_LIFETIME, secret=secret, dev_only=True
    )
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"http://{host}:{settings.port}/#token={token}"

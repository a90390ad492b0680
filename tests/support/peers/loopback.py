"""An aiohttp application served on 127.0.0.1 (a free port) for as long as a test needs it."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """`app` listening until the block ends, over TLS with `tls`; yields its base URL,
    `http://127.0.0.1:PORT` (`https://…` with `tls`). Requests still running at the end (a
    peer told to be slow) are cut after half a second."""
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls).start()
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()

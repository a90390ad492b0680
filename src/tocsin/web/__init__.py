"""The reminders page: hand-written HTML, CSS and JavaScript served as they are (no build
step, nothing from another origin), and the Content-Security-Policy they run under.

The page is a client of the public API alone (`/v1/…` with an owner token), so it can do
nothing a person's own script could not. The policy allows only this origin's files: no
inline script or style (`unsafe-inline`), no `eval`, no frames, no form posts elsewhere.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",  # the web-app manifest, for a phone's home screen
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    # The feed's URL carries a ticket: no other site is told the page's addresses.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated each load: a new version shows at once
}
PAGE = "index.html"
# The files served under /web/, by name, with their media type: nothing else is.
ASSETS = {
    "page.css": "text/css; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
    "words.js": "text/javascript; charset=utf-8",
    "worker.js": "text/javascript; charset=utf-8",  # the service worker (its scope: /web/)
    "icon.svg": "image/svg+xml",
    "manifest.webmanifest": "application/manifest+json",
}


@cache
def read(name: str) -> bytes:
    """One of the page's files (`PAGE` or a name in `ASSETS`), read once per process."""
    return files(__name__).joinpath(name).read_bytes()

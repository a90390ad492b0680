"""`/docs` (Swagger UI) and `/redoc` (ReDoc) from files shipped in the package, not a CDN.

A server with no internet access still shows its schema, and the pages load nothing from
elsewhere: their Content-Security-Policy allows scripts, styles and fetches from this server
only. Two allowances are the viewers' own needs: both set styles inline (`style-src
'unsafe-inline'`: styles cannot run code), and ReDoc runs its search index in a worker made
from a `blob:` URL. ReDoc's sidebar drew its maker's logo from their CDN, which the policy
refused with a console error: our copy has no address for it, and ReDoc hides an image
that does not load. `api/vendor/README.md` says where the files come from.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from fastapi import APIRouter
from starlette.responses import FileResponse, HTMLResponse, Response

from tocsin.api.problems import Problem

ASSETS = "/docs/assets"
CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src blob:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
_HERE = Path(__file__).parent
# What `/docs/assets/{name}` may serve: nothing else under the package is reachable.
_FILES = {
    "swagger-ui-bundle.js": _HERE / "vendor" / "swagger-ui" / "swagger-ui-bundle.js",
    "swagger-ui.css": _HERE / "vendor" / "swagger-ui" / "swagger-ui.css",
    "favicon-32x32.png": _HERE / "vendor" / "swagger-ui" / "favicon-32x32.png",
    "redoc.standalone.js": _HERE / "vendor" / "redoc" / "redoc.standalone.js",
    "swagger-init.js": _HERE / "static" / "swagger-init.js",
    "redoc-init.js": _HERE / "static" / "redoc-init.js",
}
_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
# The files change only with a release, which changes nothing in their names: an hour keeps
# an upgrade's new viewer from waiting long.
_ASSET_CACHE = "public, max-age=3600"

router = APIRouter(include_in_schema=False)


def _page(title: str, head: str, body: str, openapi_url: str) -> HTMLResponse:
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="icon" type="image/png" href="{ASSETS}/favicon-32x32.png">
{head}
</head>
<body data-openapi="{escape(openapi_url)}">
{body}
</body>
</html>
"""
    headers = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
    return HTMLResponse(html, headers=headers)


@router.api_route("/docs", methods=["GET", "HEAD"])
async def swagger_ui() -> HTMLResponse:
    return _page(
        "Tocsin API",
        f'<link rel="stylesheet" href="{ASSETS}/swagger-ui.css">',
        f'<div id="swagger-ui"></div>\n<script src="{ASSETS}/swagger-ui-bundle.js"></script>\n'
        f'<script src="{ASSETS}/swagger-init.js"></script>',
        "/openapi.json",
    )


@router.api_route("/redoc", methods=["GET", "HEAD"])
async def redoc() -> HTMLResponse:
    return _page(
        "Tocsin API",
        "",
        f'<div id="redoc"></div>\n<script src="{ASSETS}/redoc.standalone.js"></script>\n'
        f'<script src="{ASSETS}/redoc-init.js"></script>',
        "/openapi.json",
    )


@router.api_route(ASSETS + "/{name}", methods=["GET", "HEAD"])
async def asset(name: str) -> Response:
    path = _FILES.get(name)
    if path is None:
        raise Problem(404, "not-found", f"no documentation asset named {name!r}")
    return FileResponse(
        path,
        media_type=_TYPES[path.suffix],
        headers={"Cache-Control": _ASSET_CACHE, "X-Content-Type-Options": "nosniff"},
    )

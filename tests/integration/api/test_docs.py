"""`/docs` and `/redoc` come from the package's own files: every asset from this server, under
a policy that lets nothing else load, and both pages render in a real browser that cannot
reach the internet."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import running
from tocsin.api.docs import CSP

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_REFERENCES = re.compile(r"""(?:src|href)="([^"]*)\"""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_a_page_and_its_assets_come_from_this_server(
    client: httpx.AsyncClient, page: str
) -> None:
    response = await client.get(page)

    assert response.status_code == 200
    assert response.headers["content-security-policy"] == CSP
    assert "script-src 'self';" in CSP
    assert "<script>" not in response.text  # no inline script: the policy would refuse it
    references = _REFERENCES.findall(response.text)
    assert references
    for reference in references:
        assert reference.startswith("/docs/assets/"), reference
        asset = await client.get(reference)
        assert asset.status_code == 200, reference
        assert asset.headers["content-type"].split(";")[0] in {
            "text/javascript",
            "text/css",
            "image/png",
        }


async def test_no_asset_refers_to_another_origin_for_an_image(client: httpx.AsyncClient) -> None:
    redoc = await client.get("/docs/assets/redoc.standalone.js")

    assert redoc.status_code == 200
    assert "cdn.redoc.ly" not in redoc.text


async def test_only_the_listed_assets_are_served(client: httpx.AsyncClient) -> None:
    for name in ("app.py", "..%2Fapp.py", "README.md", "LICENSE"):
        response = await client.get(f"/docs/assets/{name}")
        assert response.status_code == 404, name
        assert response.headers["content-type"] == "application/problem+json"


async def test_the_viewers_are_not_in_the_schema(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert not [path for path in paths if path.startswith(("/docs", "/redoc"))]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("docs") / "tocsin.db"
    with running("serve", "--db", str(db)) as (base, _):
        yield base


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt install chromium)")
@pytest.mark.parametrize(
    ("page", "rendered"),
    [
        ("/docs", 'class="opblock-summary-path" data-path="/v1/reminders"'),
        ("/redoc", "menu-content"),
    ],
)
def test_each_viewer_renders_offline_in_a_browser(
    server: str, page: str, rendered: str, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path}",
            # No internet: every name but this server's address fails to resolve.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=20000",
            "--dump-dom",
            f"{server}{page}",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )

    assert rendered in done.stdout, done.stderr[-2000:]
    assert "/v1/reminders" in done.stdout
    # Nothing from elsewhere is even asked for (ReDoc's logo from its maker's CDN included).
    assert re.findall(r"Loading the \w+ '([^']+)' violates", done.stderr) == []
    assert "Refused to execute" not in done.stderr
    assert "Refused to apply" not in done.stderr

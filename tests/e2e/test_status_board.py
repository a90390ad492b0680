"""The status board in a real browser: a `tocsin serve` with an admin key rings a few
reminders; headless Chromium (Debian's package, driven by Playwright) opens `/status`, is
given the key, and draws the charts from the live board. The screenshot the README shows is
taken here (docs/images/status.png)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from tests.support.processes import clean_env, running, tocsin

pytestmark = pytest.mark.slow

SCREENSHOT = Path(__file__).parents[2] / "docs" / "images" / "status.png"
PHONE_SCREENSHOT = SCREENSHOT.with_name("status-phone.png")
PHONE = {"width": 390, "height": 844}
RINGS = 5
AHEAD_MINUTES = (3, 7, 7, 15, 42)


@dataclass(frozen=True, kw_only=True, slots=True)
class Server:
    base: str
    key: str  # an admin key


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`tocsin serve` with an admin key, after RINGS reminders rang and a few wait ahead."""
    db = str(tmp_path_factory.mktemp("status") / "tocsin.db")
    created = tocsin("keys", "create", "--app", "ops", "--admin", "--db", db)
    key = next(line for line in created.stdout.splitlines() if line.startswith("tk_"))
    with running("serve", "--db", db, env=clean_env(), log=Path(db).with_suffix(".log")) as (
        base,
        _,
    ):
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
            now = datetime.now(UTC).replace(microsecond=0)
            soon = [now + timedelta(seconds=2 + n) for n in range(RINGS)]
            later = [now + timedelta(minutes=m) for m in AHEAD_MINUTES]
            ids = [_remind(client, f"ring {n}", at) for n, at in enumerate(soon)]
            for n, at in enumerate(later):
                _remind(client, f"later {n}", at)
            for reminder_id in ids:
                _wait_sent(client, reminder_id)
        yield Server(base=base, key=key)


def _remind(client: httpx.Client, text: str, at: datetime) -> str:
    body = {"owner": "ana", "text": text, "zone": "UTC", "channel": "log"}
    body["at"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    made = client.post("/v1/reminders", json=body)
    assert made.status_code == 201, made.text
    reminder_id: str = made.json()["id"]
    return reminder_id


def _wait_sent(client: httpx.Client, reminder_id: str, within: float = 30) -> None:
    give_up = time.monotonic() + within
    while time.monotonic() < give_up:
        firings = client.get(f"/v1/reminders/{reminder_id}/firings").json()["firings"]
        if firings and firings[0]["state"] == "sent":
            return
        time.sleep(0.2)
    raise AssertionError(f"{reminder_id} was not sent within {within} s")


def _values(page: Page, selector: str) -> list[float]:
    found: list[Any] = page.eval_on_selector_all(
        selector, "nodes => nodes.map(n => Number(n.dataset.value))"
    )
    return [float(value) for value in found]


def test_the_board_draws_its_charts_from_live_data(browser: Browser, server: Server) -> None:
    board = httpx.get(
        f"{server.base}/v1/status", headers={"Authorization": f"Bearer {server.key}"}
    ).json()
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    # The first poll's 401 (no key yet) is logged too; only refusals and script errors count.
    page.on("console", lambda m: errors.append(m.text) if "Refused" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{server.base}/status")
        page.wait_for_selector("#key-form:not([hidden])")  # keys exist: it asks for one
        page.fill("#key", server.key)
        page.press("#key", "Enter")
        page.wait_for_selector("#rings-chart svg[data-bars]")
        page.wait_for_function(
            "() => document.querySelectorAll('#workers tbody tr').length > 0", timeout=15_000
        )

        sent = _values(page, "#rings-chart rect[data-series=sent]")
        ahead = _values(page, "#ahead-chart rect[data-series=due]")
        lateness = _values(page, "#lateness-chart circle[data-series=max]")
        worker = page.inner_text("#workers tbody tr td")
        held = page.inner_text("#workers tbody tr td.parts")
        home = page.get_attribute("header a", "href")
        summary = page.inner_text("#parts-summary")
        state = page.inner_text("#state")
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        stored = page.evaluate("() => localStorage.getItem('tocsin.adminKey')")
    finally:
        page.close()

    assert sum(sent) == RINGS
    assert sum(ahead) == len(AHEAD_MINUTES)
    assert max(ahead) == 2  # the two due in the same minute
    assert lateness
    assert max(lateness) == max(
        m["lateness"]["max"] for m in board["rings"]["minutes"] if m["lateness"]
    )
    assert worker == board["workers"][0]["id"]
    parts = board["workers"][0]["parts"]
    words = "part" if len(parts) == 1 else "parts"
    assert held == f"{len(parts)} ({words} {', '.join(map(str, parts))})"  # a count, then which
    assert home == "/"
    assert summary == f"1 alive; {board['parts']} of {board['parts']} parts held."
    assert state.startswith("As of ")
    assert stored == server.key  # a reload stays signed in
    assert errors == []  # nothing refused by the Content-Security-Policy, no script error


def test_the_board_fits_a_phone(browser: Browser, server: Server) -> None:
    page = browser.new_page(viewport={"width": PHONE["width"], "height": PHONE["height"]})
    try:
        page.goto(f"{server.base}/status")
        page.wait_for_selector("#key-form:not([hidden])")
        page.fill("#key", server.key)
        page.press("#key", "Enter")
        page.wait_for_selector("#workers tbody tr")
        page.wait_for_selector("#rings-chart svg[data-bars]")
        width = page.evaluate("document.documentElement.scrollWidth")
        labelled = page.evaluate(
            "getComputedStyle(document.querySelector('#workers td.parts'), '::before').content"
        )
        page.screenshot(path=str(PHONE_SCREENSHOT), full_page=True)
    finally:
        page.close()

    assert width <= PHONE["width"]
    assert labelled == '"Parts held: "'  # each line of a worker's card names its column

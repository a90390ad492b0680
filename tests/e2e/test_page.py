"""The reminders page in a real browser (headless Chromium) against a real `tocsin serve`:
signed in by the link the server prints, a reminder made from one sentence and its preview
(the words and the time read, the next rings), one-offs in plain words (the preview saying
which day, `in 3 seconds` ringing), a bad sentence's error in place, a ring arriving live
(sound, notification) that is snoozed, snooze choices that say what they count from, deletes
(one too late), the views (coming up by next ring, today, overdue or failed, rang) with
priority and a failed ring told from a delivered one, the edit box's local time, a 12-hour
locale's clock, the firing history, contacts, keyboard-only creation and a phone-sized
screen. One server for the module; each test opens its own browser context.

The tests save screenshots of the page to docs/images/ for the README."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Locator,
    Page,
    ViewportSize,
    expect,
)

from tests.support.processes import clean_env, running, tocsin

pytestmark = [pytest.mark.slow, pytest.mark.long]

ZONE = "Europe/Paris"
IMAGES = Path(__file__).parents[2] / "docs" / "images"
DESKTOP: ViewportSize = {"width": 1000, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
# Counts the sounds and notifications a ring makes, through the browser's real APIs.
OBSERVE_RINGS = """
window.rang = { tones: 0, notes: [] };
const RealAudio = window.AudioContext;
window.AudioContext = class extends RealAudio {
  createOscillator() { window.rang.tones += 1; return super.createOscillator(); }
};
const RealNotification = window.Notification;
window.Notification = class extends RealNotification {
  constructor(title, options) { super(title, options); window.rang.notes.push(options.body); }
};
window.rang.actions = [];
if (window.ServiceWorkerRegistration) {  // the page's notifications with actions go this way
  const show = ServiceWorkerRegistration.prototype.showNotification;
  ServiceWorkerRegistration.prototype.showNotification = function (title, options) {
    window.rang.notes.push(options.body);
    window.rang.actions.push((options.actions || []).map((offered) => offered.title));
    return show.call(this, title, options);
  };
}
"""


@dataclass(frozen=True)
class Server:
    base: str
    link: str  # the sign-in link `tocsin serve` printed
    db: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("page")
    db = folder / "tocsin.db"
    env = clean_env(TOCSIN_FEED_HEARTBEAT_SECONDS="1")
    log = folder / "serve.log"
    with running("serve", "--db", str(db), env=env, log=log) as (base, _):
        line = next(x for x in log.read_text().splitlines() if "Try the reminders page" in x)
        link = line.rpartition(" ")[2]
        assert link.startswith(f"{base}/#token=to_")
        yield Server(base=base, link=link, db=db)


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context(timezone_id=ZONE, viewport=DESKTOP, locale="en-GB")
    made.grant_permissions(["notifications"])
    made.add_init_script(OBSERVE_RINGS)
    made.set_default_timeout(10_000)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def page(context: BrowserContext, server: Server) -> Iterator[Page]:
    """The page, signed in by the printed link; no page error or policy violation on it."""
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.on("console", lambda message: _console(message, problems))
    answer = opened.goto(server.link)
    assert answer is not None
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    expect(opened.locator("#owner-name")).to_have_text("demo")
    yield opened
    assert problems == []


def _console(message: ConsoleMessage, problems: list[str]) -> None:
    """An error on the console, but for the browser's note of each answer >= 400 (the page
    shows the server's refusals: a bad phrase's 422 is expected)."""
    if message.type == "error" and not message.text.startswith("Failed to load resource"):
        problems.append(message.text)


def local_in(seconds: int) -> str:
    return (datetime.now(ZoneInfo(ZONE)) + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def reminder(page: Page, text: str) -> Locator:
    return page.locator(".reminder", has_text=text)


def is_refusal(place: Locator) -> bool:
    """Whether `place` is drawn in the colour of the page's errors (not its successes')."""
    script = """(e) => getComputedStyle(e).color
        === getComputedStyle(document.querySelector('#new-say-error')).color"""
    return bool(place.evaluate(script))


def create(page: Page, text: str, when: str) -> None:
    page.fill("#new-say", f"{text} {when}")
    page.click("#create-button")
    expect(page.locator("#create-answer")).to_contain_text(f"Saved “{text}”")


def test_sign_in_link_form_preview_and_error_in_place(page: Page, server: Server) -> None:
    assert "#token" not in page.url  # the link's token left the address bar...
    token = page.evaluate("localStorage.getItem('tocsin.token')")
    assert token == server.link.partition("#token=")[2]  # ...and was kept
    expect(page.locator("#new-zone")).to_have_value(ZONE)  # the browser's zone

    page.fill("#new-say", "Water the plants every Monday 9:00")
    preview = page.locator("#preview-list li")
    expect(preview).to_have_count(5)
    for n in range(5):
        expect(preview.nth(n)).to_contain_text("09:00")

    expect(page.locator("#preview-text")).to_have_text("“Water the plants” — every Monday 9:00")
    page.fill("#new-say", "Water the plants every blursday")
    error = page.locator("#new-say-error")
    expect(error).not_to_be_empty()
    expect(page.locator("#new-say")).to_have_attribute("aria-invalid", "true")
    expect(preview).to_have_count(0)

    page.fill("#new-say", "Water the plants every Monday 9:00")
    expect(preview).to_have_count(5)
    expect(error).to_be_empty()
    page.click("#create-button")
    expect(page.locator("#create-answer")).to_contain_text("Saved “Water the plants”")
    item = reminder(page, "Water the plants")
    expect(item).to_contain_text("every Monday 9:00 (Europe/Paris)")
    expect(item.locator(".in")).to_contain_text("in ")

    page.reload()  # stays signed in
    expect(reminder(page, "Water the plants")).to_be_visible()


def test_a_ring_arrives_live_and_is_snoozed_and_deleted(page: Page) -> None:
    expect(page.locator("body")).to_have_attribute("data-feed", "open")
    create(page, "Tea is ready", local_in(3))
    ring = page.locator(".ring", has_text="Tea is ready")
    expect(ring).to_be_visible(timeout=20_000)
    assert page.evaluate("window.rang.tones") > 0
    assert page.evaluate("window.rang.notes") == ["Tea is ready"]
    page.screenshot(path=IMAGES / "page.png", full_page=True)

    ring.get_by_role("button", name="Snooze “Tea is ready” 10 minutes").click()
    expect(page.locator("#status")).to_contain_text("Snoozed “Tea is ready”: it rings again in 10")
    expect(ring).to_have_count(0)
    snoozed = reminder(page, "Tea is ready")
    expect(snoozed.locator(".in")).to_contain_text("in 10 minutes")

    snoozed.get_by_role("button", name="Delete “Tea is ready”").click()
    snoozed.get_by_role("button", name="Yes, delete “Tea is ready”").click()
    expect(snoozed.locator(".answer")).to_have_text("Deleted “Tea is ready”.")
    assert not is_refusal(snoozed.locator(".answer"))

    page.select_option("#filter", "fired")  # the one that rang: no delete is offered
    rang = reminder(page, "Tea is ready")
    expect(rang.locator(".meta")).to_contain_text("last ring: delivered")
    expect(rang.get_by_role("button", name="Delete “Tea is ready”")).to_be_hidden()
    rang.get_by_label("Snooze “Tea is ready”").click()  # its ring was snoozed from the alert
    expect(rang.locator("[data-snooze='10m']")).to_have_text("In 10 min")  # it rang: from now
    rang.get_by_role("button", name="In 10 min").click()
    expect(rang.locator(".answer")).to_contain_text("Not snoozed: its last ring")
    assert is_refusal(rang.locator(".answer"))

    rang.get_by_label("History of “Tea is ready”").click()
    history = rang.locator(".firings")
    expect(history).to_contain_text(re.compile(r"Due today [\d:]+: sent by inapp, \d attempts?"))
    # The sender may record the ring as waiting for a page before the page's receipt lands.
    expect(history.locator("li li").last).to_have_text(re.compile(r"to feed: sent$"))


def test_plain_words_preview_their_day_and_ring(page: Page) -> None:
    expect(page.locator("body")).to_have_attribute("data-feed", "open")
    page.fill("#new-say", "tomorrow 9am call mom")
    preview = page.locator("#preview-list li")
    expect(preview).to_have_count(1)
    expect(preview.first).to_contain_text("tomorrow 09:00")

    earlier = datetime.now(ZoneInfo(ZONE)) - timedelta(hours=2)
    if earlier.date() == datetime.now(ZoneInfo(ZONE)).date():  # not just after midnight
        page.fill("#new-say", f"call mom {earlier:%H:%M}")  # already past today: tomorrow's
        expect(preview.first).to_contain_text(f"tomorrow {earlier:%H:%M}")

    page.fill("#new-say", "call mom tomorrow at nine-ish")
    expect(page.locator("#new-say-error")).to_contain_text("found no time at the start or the end")
    expect(preview).to_have_count(0)

    create(page, "Call mom", "in 3 seconds")
    ring = page.locator(".ring", has_text="Call mom")
    expect(ring).to_be_visible(timeout=20_000)
    assert "Call mom" in page.evaluate("window.rang.notes")


def test_snooze_choices_and_edit(page: Page) -> None:
    create(page, "Stretch", "2099-01-01 08:00")
    item = reminder(page, "Stretch")
    item.get_by_label("Snooze “Stretch”").click()
    # Not yet rung: a snooze puts it off from its own time, and the choices say so.
    expect(item.locator(".snooze-from")).to_have_text("From its time, Thu 1 Jan 2099 08:00:")
    expect(item.locator("[data-snooze='10m']")).to_have_text("10 min later")
    item.get_by_role("button", name="1 hour later").click()
    expect(reminder(page, "Stretch").locator(".answer")).to_contain_text("Snoozed: it rings")
    expect(reminder(page, "Stretch").locator(".next")).to_contain_text("09:00")

    item = reminder(page, "Stretch")
    item.get_by_label("Snooze “Stretch”").click()
    item.locator(".until").fill("2099-02-03T07:30")
    item.get_by_role("button", name="Snooze until then").click()
    expect(reminder(page, "Stretch").locator(".next")).to_contain_text("3 Feb 2099 07:30")

    reminder(page, "Stretch").get_by_role("button", name="Edit “Stretch”").click()
    form = page.locator(".edit-form")
    form.get_by_label("What").fill("Stretch well")
    form.get_by_label("When").fill("weekdays at 7:15")
    form.get_by_role("button", name="Save").click()
    edited = reminder(page, "Stretch well")
    expect(edited.locator(".answer")).to_have_text("Saved.")
    expect(edited).to_contain_text("weekdays at 7:15")
    expect(edited.locator(".next")).to_contain_text("07:15")


def test_only_what_can_be_done_is_offered(page: Page, server: Server) -> None:
    ready = page.evaluate(
        "async () => (await (await fetch('/v1/owners/demo/channels', {headers: {Authorization: "
        "`Bearer ${localStorage.getItem('tocsin.token')}`}})).json()).channels"
    )
    assert {c["channel"]: c["ready"] for c in ready}["webhook"] is False  # no URL in dev mode
    offered = page.locator("#new-channel option").evaluate_all("(os) => os.map((o) => o.value)")
    assert offered == ["inapp", "log"]  # webhook is configured, but would find nowhere to go

    # Saved on one all the same (an older page offered it): the answer says it cannot ring.
    page.evaluate("document.querySelector('#new-channel').add(new Option('webhook', 'webhook'))")
    page.select_option("#new-channel", "webhook")
    create(page, "Hooked", "2099-01-01 08:00")
    expect(page.locator("#create-answer")).to_contain_text("no webhook URL")
    assert is_refusal(page.locator("#create-answer"))
    page.select_option("#new-channel", "inapp")

    create(page, "Morning pills", "every day at 07:00")
    series = reminder(page, "Morning pills")
    expect(series.get_by_role("button", name="Delete “Morning pills”")).to_be_visible()
    expect(series.get_by_label("Snooze “Morning pills”")).to_be_hidden()  # it has not rung

    # A channel the server refuses (as one would be, configured when the page was loaded):
    # its error goes with another choice, and the neighbouring box keeps its height.
    zone_height = page.locator("#new-zone").bounding_box()
    page.evaluate("document.querySelector('#new-channel').add(new Option('email', 'email'))")
    page.select_option("#new-channel", "email")
    page.fill("#new-say", "By mail 2099-01-01 08:00")
    page.click("#create-button")
    expect(page.locator("#new-channel-error")).to_contain_text("not configured")
    assert page.locator("#new-zone").bounding_box() == zone_height
    page.select_option("#new-channel", "inapp")
    expect(page.locator("#new-channel-error")).to_be_hidden()
    expect(page.locator("#new-channel")).to_have_attribute("aria-invalid", "false")


def test_a_delete_asks_first_and_an_empty_what_says_so(page: Page) -> None:
    page.click("#create-button")
    what = page.locator("#new-say-error")
    expect(what).to_have_text("Say what the reminder is for: its words are what rings.")
    expect(page.locator("#new-say")).to_have_attribute("aria-invalid", "true")
    assert page.evaluate("document.activeElement.id") == "new-say"
    page.fill("#new-say", "2099-03-01 08:00")  # a time alone
    page.click("#create-button")
    expect(what).to_contain_text("is only a time: say what to remind you of too")
    expect(page.locator("#create-answer")).to_be_empty()

    create(page, "Dentist", "2099-03-01 08:00")
    expect(what).to_be_empty()
    item = reminder(page, "Dentist")
    item.get_by_role("button", name="Delete “Dentist”").click()
    expect(item.locator(".confirm")).to_contain_text("Delete “Dentist”? It will not ring.")
    item.get_by_role("button", name="Keep “Dentist”").click()  # changed their mind
    expect(item.locator(".confirm")).to_have_count(0)
    assert page.evaluate("document.activeElement.className") == "delete"
    page.reload()
    item = reminder(page, "Dentist")
    expect(item).not_to_have_class(re.compile("gone"))
    item.get_by_role("button", name="Delete “Dentist”").click()
    item.get_by_role("button", name="Yes, delete “Dentist”").click()
    expect(item.locator(".answer")).to_have_text("Deleted “Dentist”.")


def test_the_list_stays_current_after_a_save_and_a_ring(page: Page) -> None:
    page.select_option("#filter", "cancelled")
    # Rung by the log channel, no event reaches the page: the list is read again anyway.
    page.select_option("#new-channel", "log")
    create(page, "Kettle", local_in(5))
    expect(page.locator("#filter")).to_have_value("pending")  # where the new one shows
    expect(reminder(page, "Kettle")).to_be_visible()
    expect(page.locator("#reminders-empty")).to_be_hidden()
    expect(reminder(page, "Kettle")).to_have_count(0, timeout=30_000)
    page.select_option("#filter", "fired")
    expect(reminder(page, "Kettle").locator(".meta")).to_contain_text("last ring: delivered")


def test_a_view_of_what_rang_takes_in_a_ring_that_was_pending_when_it_was_read(page: Page) -> None:
    # Due well after the view is read: the view saying it is empty is what proves it was read
    # before "Tea" rang (no wall-clock gap is assumed), and only the page's own timer reads
    # it again.
    tea = {"text": "Tea", "when": "in 20 seconds", "zone": ZONE, "channel": "log"}
    _api(page, "POST", "/v1/reminders", tea)
    page.select_option("#filter", "fired")
    expect(page.locator("#reminders-empty")).to_have_text("Nothing has rung yet.")
    rang = reminder(page, "Tea").locator(".last")
    expect(rang).to_have_text(" · last ring: delivered", timeout=90_000)


def test_create_with_the_keyboard_alone(page: Page) -> None:
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Enter")
    order = []
    typed = {"new-say": "Call mom daily 18:00"}
    for _ in range(4):
        focused = page.evaluate("document.activeElement.id")
        order.append(focused)
        if focused in typed:
            page.keyboard.type(typed[focused])
        if focused != "create-button":
            page.keyboard.press("Tab")
    assert order == ["new-say", "new-zone", "new-channel", "create-button"]
    expect(page.locator("#preview-list li")).to_have_count(5)
    page.keyboard.press("Enter")
    expect(page.locator("#create-answer")).to_contain_text("Saved “Call mom”")
    expect(reminder(page, "Call mom")).to_contain_text("daily 18:00")
    assert page.evaluate("document.activeElement.id") == "new-say"  # ready for the next


def test_contacts_show_why_one_is_disabled(page: Page, server: Server) -> None:
    page.fill("#contact-value", "not an address")
    page.click("#contact-form button[type=submit]")
    expect(page.locator("#contact-error")).to_contain_text("Not added")

    page.fill("#contact-value", "ana@example.com")
    page.fill("#contact-label", "work")
    page.click("#contact-form button[type=submit]")
    contact = page.locator(".contact", has_text="ana@example.com")
    expect(contact).to_contain_text("Email address: ana@example.com (work)")

    with sqlite3.connect(server.db) as db:  # as delivery does when a provider calls it gone
        db.execute(
            "UPDATE contacts SET disabled_reason = 'the mail server says no such mailbox', "
            "disabled_at = created_at WHERE owner = 'demo'"
        )
    page.reload()
    expect(contact).to_contain_text("Not ringing: the mail server says no such mailbox")
    contact.get_by_role("button", name="Remove Email address ana@example.com").click()
    expect(page.locator("#status")).to_have_text("Removed Email address ana@example.com.")
    expect(contact).to_have_count(0)


def test_places_are_added_refused_by_name_and_removed(page: Page) -> None:
    page.fill("#place-name", "Home")
    page.fill("#place-centre", "somewhere")
    page.click("#place-form button[type=submit]")
    expect(page.locator("#place-error")).to_contain_text("give where as latitude, longitude")
    expect(page.locator("#place-centre")).to_have_attribute("aria-invalid", "true")

    page.fill("#place-centre", "95, 13.405")  # two numbers, but north of the pole
    page.click("#place-form button[type=submit]")
    expect(page.locator("#place-error")).to_contain_text("latitude:")
    expect(page.locator("#place-centre")).to_be_focused()

    page.fill("#place-centre", "52.52, 13.405")
    page.fill("#place-radius", "200")
    page.click("#place-form button[type=submit]")
    home = page.locator(".place", has_text="Home")
    expect(home).to_have_text(re.compile(r"Home: 52\.52, 13\.405 \(within 200 m\)"))
    expect(page.locator("#place-error")).to_be_empty()
    page.locator("#places").screenshot(path=IMAGES / "page-places.png")
    page.reload()  # read back from the server
    home.get_by_role("button", name="Remove place Home").click()
    expect(page.locator("#status")).to_have_text("Removed Home.")
    expect(home).to_have_count(0)


def test_quiet_hours_are_saved_refused_by_name_and_cleared(page: Page) -> None:
    page.fill("#quiet-start", "22:00")
    page.fill("#quiet-end", "06:30")
    page.fill("#quiet-zone", "Mars/Olympus")
    page.click("#quiet-form button[type=submit]")
    expect(page.locator("#quiet-error")).to_contain_text("zone:")
    expect(page.locator("#quiet-zone")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#quiet-zone")).to_be_focused()

    page.fill("#quiet-zone", "Europe/Berlin")
    page.click("#quiet-form button[type=submit]")
    quiet = page.locator(".quiet")
    expect(quiet).to_have_text(re.compile(r"^22:00 to 06:30 \(Europe/Berlin\)"))
    expect(page.locator("#quiet-error")).to_be_empty()
    expect(page.locator("#status")).to_have_text("Quiet hours saved: 22:00 to 06:30.")
    page.locator("#quiet").screenshot(path=IMAGES / "page-quiet-hours.png")
    page.reload()  # read back from the server, into the form too
    expect(quiet).to_have_count(1)
    expect(page.locator("#quiet-end")).to_have_value("06:30")
    quiet.get_by_role("button", name="Clear your quiet hours").click()
    expect(page.locator("#status")).to_have_text("Quiet hours cleared.")
    expect(quiet).to_have_count(0)


def test_a_bulk_reminder_is_edited_to_ring_through_quiet_hours(page: Page) -> None:
    saved = page.evaluate(
        """async () => (await fetch('/v1/reminders', {method: 'POST', body: JSON.stringify({
            text: 'Weekly digest', zone: 'Europe/Paris', repeat: 'every Monday at 06:00',
            channel: 'inapp', priority: 'bulk'}), headers: {'Content-Type': 'application/json',
            Authorization: `Bearer ${localStorage.getItem('tocsin.token')}`}})).status"""
    )
    assert saved == 201
    page.reload()
    digest = reminder(page, "Weekly digest")
    expect(digest.locator(".priority")).to_have_text(" · bulk (after urgent ones)")
    digest.get_by_role("button", name="Edit “Weekly digest”").click()
    through = page.locator(".edit-form").get_by_label("Ring through my quiet hours")
    expect(through).not_to_be_checked()
    through.check()
    page.locator(".edit-form").get_by_role("button", name="Save").click()
    digest = reminder(page, "Weekly digest")
    expect(digest.locator(".answer")).to_have_text("Saved.")
    expect(digest.locator(".priority")).to_have_text(
        " · bulk (after urgent ones, through quiet hours)"
    )

    create(page, "Pharmacy", "2099-01-01 08:00")  # urgent: quiet hours never hold it
    reminder(page, "Pharmacy").get_by_role("button", name="Edit “Pharmacy”").click()
    expect(page.locator(".edit-form").get_by_label("Ring through my quiet hours")).to_be_hidden()


def test_early_alerts_are_set_in_the_edit_box_refused_by_name_and_shown(page: Page) -> None:
    create(page, "Optician", "2099-01-01 08:00")
    reminder(page, "Optician").get_by_role("button", name="Edit “Optician”").click()
    form = page.locator(".edit-form")
    form.get_by_label("Early alerts").fill("1d, soon")
    form.get_by_role("button", name="Save").click()
    expect(form.locator(".error")).to_contain_text("alerts.1:")
    form.get_by_label("Early alerts").fill("15m, 1d")
    form.get_by_role("button", name="Save").click()
    optician = reminder(page, "Optician")
    expect(optician.locator(".answer")).to_have_text("Saved.")
    # The next ring is the day before's alert; the list says which time it is for.
    expect(optician.locator(".alerts")).to_have_text(
        " · alerts 1d, 15m before; the next for Thu 1 Jan 2099 08:00"
    )
    expect(optician.locator(".next")).to_contain_text("31 Dec 2098 08:00")
    optician.get_by_label("Snooze “Optician”").click()
    expect(optician.locator(".snooze-from")).to_have_text("From its time, Thu 1 Jan 2099 08:00:")
    optician.screenshot(path=IMAGES / "page-alerts.png")
    optician.get_by_role("button", name="Edit “Optician”").click()
    expect(page.locator(".edit-form").get_by_label("Early alerts")).to_have_value("1d, 15m")


def test_a_list_is_made_shared_and_reminded_for_one_member(page: Page, server: Server) -> None:
    page.click("#list-form button[type=submit]")
    expect(page.locator("#list-error")).to_contain_text("name:")
    expect(page.locator("#list-name")).to_be_focused()
    page.fill("#list-name", "Household")
    page.click("#list-form button[type=submit]")
    shared = page.locator(".shared-list", has_text="Household")
    expect(shared.locator(".members")).to_have_text("demo (owner)")

    shared.get_by_label("Invite to Household").fill("ben")
    shared.get_by_role("button", name="Invite").click()
    expect(shared.locator(".members")).to_have_text("ben (editor, invited) · demo (owner)")
    list_id = shared.get_attribute("data-list")
    token = tocsin("keys", "owner-token", "ben", "--db", str(server.db)).stdout.strip()
    path = f"{server.base}/v1/lists/{list_id}/members/ben/accept"
    accepted = httpx.post(path, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert accepted.status_code == 200, accepted.text

    page.reload()  # ben joined meanwhile
    shared.get_by_label("Remind Household").fill("bins out tomorrow at 19:00")
    shared.get_by_label("For").select_option("ben")
    shared.get_by_role("button", name="Remind the list").click()
    expect(page.locator("#status")).to_have_text("Saved “bins out” in Household, for ben.")
    expect(shared.locator(".members")).to_have_text("ben (editor) · demo (owner)")
    expect(shared.locator(".list-reminders li")).to_have_text(
        re.compile(r"^bins out — tomorrow 19:00 · for ben$")
    )
    shared.screenshot(path=IMAGES / "page-lists.png")
    shared.get_by_role("button", name="Leave Household").click()  # the last owner, with ben
    expect(shared.locator(".error")).to_contain_text("make another member owner first")

    shared.get_by_role("button", name="Delete Household").click()  # asks first
    shared.get_by_role("button", name="Keep Household").click()
    expect(shared.locator(".list-reminders li")).to_have_count(1)
    shared.get_by_role("button", name="Delete Household").click()
    shared.get_by_role("button", name="Yes, delete Household").click()
    expect(page.locator("#status")).to_have_text("Deleted Household; its reminders are cancelled.")
    expect(page.locator(".shared-list", has_text="Household")).to_have_count(0)


# A reminder's rings, read with the page's token.
RINGS = """async (id) => (await (await fetch(`/v1/reminders/${id}/firings`, {headers:
    {Authorization: `Bearer ${localStorage.getItem('tocsin.token')}`}})).json()).firings"""


def nagging(page: Page, text: str, *, seconds: int) -> dict[str, Any]:
    """An in-app one-off saved with the page's token, ringing in `seconds` and every 5
    minutes after until done (the page's own box does not set `until_done`)."""
    at = (datetime.now(ZoneInfo("UTC")) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    saved: dict[str, Any] = page.evaluate(
        """async ([text, at]) => (await fetch('/v1/reminders', {method: 'POST', body:
            JSON.stringify({text, zone: 'Europe/Paris', at, channel: 'inapp', until_done: '5m'}),
            headers: {'Content-Type': 'application/json',
            Authorization: `Bearer ${localStorage.getItem('tocsin.token')}`}})).json()""",
        [text, at],
    )
    return saved


def test_a_ring_is_marked_done_in_its_history_and_its_nags_stop(page: Page) -> None:
    saved = nagging(page, "Evening pills", seconds=2)
    assert saved["until_done"] == "5m", saved
    page.wait_for_function(f"({RINGS})('{saved['id']}').then((f) => f.length > 0)", polling=300)
    page.reload()
    pills = reminder(page, "Evening pills")
    expect(pills.locator(".nags")).to_have_text(" · again every 5m until done")
    done = pills.get_by_role("button", name=re.compile("^Mark the ring due .* done$"))
    for _ in range(120):  # the ring taken live redraws the list, closing an open history
        if not pills.locator(".history").evaluate("(box) => box.open"):
            pills.get_by_label("History of “Evening pills”").click()
        if done.count():
            break
        page.wait_for_timeout(500)
    done.click()
    # Done: no nag left, so it has rung and leaves what is coming up.
    expect(reminder(page, "Evening pills")).to_have_count(0)
    page.select_option("#filter", "fired")
    pills = reminder(page, "Evening pills")
    pills.get_by_label("History of “Evening pills”").click()
    expect(pills.locator(".firings")).to_contain_text("· done")


def test_a_live_ring_is_marked_done_and_its_nags_stop(page: Page) -> None:
    expect(page.locator("body")).to_have_attribute("data-feed", "open")
    saved = nagging(page, "Morning vitamins", seconds=3)
    ring = page.locator(".ring", has_text="Morning vitamins")
    expect(ring).to_be_visible(timeout=60_000)
    expect(ring.get_by_role("button")).to_have_text(["Done", "Snooze 10 min", "Dismiss"])
    # Its browser notification, shown by the page's service worker, offers them too.
    assert page.evaluate("window.rang.actions") == [["Done", "Snooze 10 min"]]
    ring.screenshot(path=IMAGES / "page-ring-actions.png")

    ring.get_by_role("button", name="Mark “Morning vitamins” done").click()

    expect(page.locator("#status")).to_have_text("Marked “Morning vitamins” done.")
    expect(ring).to_have_count(0)
    firings = page.evaluate(RINGS, saved["id"])
    assert [f["done_at"] is not None for f in firings] == [True]
    # Done before its first nag: nothing left to ring, so it leaves what is coming up.
    expect(reminder(page, "Morning vitamins")).to_have_count(0)


def test_sign_out_and_in_with_a_token(page: Page, server: Server) -> None:
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    page.reload()
    expect(page.locator("#sign-in")).to_be_visible()  # stays signed out
    page.fill("#token", "to_bm9ib2R5.1.forged")
    page.keyboard.press("Enter")
    error = page.locator("#token-error")
    expect(error).to_have_text("Not signed in: the API key or owner token is not valid.")
    page.fill("#token", server.link.partition("#token=")[2])
    page.keyboard.press("Enter")
    expect(page.locator("#owner-name")).to_have_text("demo")


def test_zones_suggest_the_browsers_and_the_manifest_is_served(page: Page, server: Server) -> None:
    zones = page.locator("#zones option")
    expect(zones.first).to_have_attribute("value", ZONE)
    expect(zones.first).to_have_text(f"{ZONE} (this browser's zone)")
    assert zones.count() > 300
    assert page.get_attribute("#new-zone", "list") == "zones"

    href = page.get_attribute("link[rel=manifest]", "href")
    assert href == "/web/manifest.webmanifest"
    answer = page.request.get(server.base + href)
    assert answer.headers["content-type"] == "application/manifest+json"
    manifest = answer.json()
    assert (manifest["start_url"], manifest["display"]) == ("/", "standalone")
    assert page.request.get(server.base + manifest["icons"][0]["src"]).ok
    policy = page.request.get(server.base + "/").headers["content-security-policy"]
    assert "manifest-src 'self'" in policy


def test_dark_mode_follows_the_system(browser: Browser, server: Server) -> None:
    dark = browser.new_context(timezone_id=ZONE, viewport=DESKTOP, color_scheme="dark")
    try:
        page = dark.new_page()
        page.goto(server.link)
        expect(page.locator(".reminder").first).to_be_visible()  # made by the tests above
        colours = page.evaluate(
            "[document.documentElement, document.querySelector('.reminder')]"
            ".map((e) => getComputedStyle(e).backgroundColor)"
        )
        assert colours == ["rgb(22, 21, 20)", "rgb(34, 32, 31)"]
        page.screenshot(path=IMAGES / "page-dark.png")
    finally:
        dark.close()


def test_fits_a_phone(browser: Browser, server: Server) -> None:
    phone = browser.new_context(timezone_id=ZONE, viewport=PHONE, is_mobile=True)
    try:
        page = phone.new_page()
        page.goto(server.link)
        expect(page.locator(".reminder").first).to_be_visible()  # made by the tests above
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        assert page.get_attribute("footer a", "href") == "/status"  # for the operator
        page.screenshot(path=IMAGES / "page-phone.png")
    finally:
        phone.close()


def _api(page: Page, method: str, path: str, body: Mapping[str, object] | None = None) -> object:
    """The API as the page calls it, with the page's own token."""
    script = """async ([method, path, body]) => {
        const init = {method, headers: {Authorization:
            `Bearer ${localStorage.getItem('tocsin.token')}`, 'Content-Type': 'application/json'}};
        if (body) init.body = JSON.stringify(body);
        return (await fetch(path, init)).json();
    }"""
    return page.evaluate(script, [method, path, body])


def show_all(page: Page) -> None:
    """Every reminder of the view drawn, by "Show more" until it is gone."""
    expect(page.locator("#reminder-list .reminder").first).to_be_visible()  # the list is read
    while page.locator("#more").is_visible():
        page.click("#more")


def test_coming_up_is_by_next_ring_and_shows_a_new_one_however_far_down(page: Page) -> None:
    for n in range(21):  # saved first, ringing after the first below and before the second
        at = f"2098-{1 + n % 12:02d}-{1 + n:02d}T08:00"
        body = {"text": f"Later {n}", "at": at, "zone": ZONE, "channel": "log"}
        made = _api(page, "POST", "/v1/reminders", body)
        assert isinstance(made, dict)
        assert made["status"] == "pending", made
    create(page, "Soonest", "2097-01-01 08:00")
    create(page, "Last of all", "2099-12-31 23:00")  # more than twenty ring before it
    expect(reminder(page, "Last of all")).to_be_visible()
    texts = page.locator("#reminder-list .text").all_inner_texts()
    assert texts.index("Soonest") < min(texts.index(f"Later {n}") for n in range(21))
    assert texts.index("Last of all") >= 22
    shown = page.locator("#reminder-list .next").evaluate_all("(ts) => ts.map((t) => t.dateTime)")
    assert shown == sorted(shown)  # all in UTC, written alike: by text is by time

    page.reload()  # a page of twenty, the rest a click away
    expect(page.locator("#reminder-list .reminder")).to_have_count(20)
    expect(reminder(page, "Soonest")).to_be_visible()
    expect(reminder(page, "Last of all")).to_have_count(0)
    show_all(page)
    expect(reminder(page, "Last of all")).to_be_visible()


def test_a_failed_ring_is_overdue_or_failed_and_told_from_a_delivered_one(page: Page) -> None:
    nowhere = {"text": "Nowhere to go", "when": "in 1 second", "zone": ZONE, "channel": "webhook"}
    made = _api(page, "POST", "/v1/reminders", nowhere)
    assert isinstance(made, dict)
    assert "no webhook URL" in made["warnings"][0]["message"]
    fine = {"text": "Delivered fine", "when": "in 1 second", "zone": ZONE, "channel": "log"}
    _api(page, "POST", "/v1/reminders", fine)
    create(page, "Urgent digest", "2099-05-01 08:00")
    expect(reminder(page, "Urgent digest")).not_to_contain_text("bulk")  # urgent: the default
    news = {"text": "News", "when": "2099-05-02 08:00", "zone": ZONE, "priority": "bulk"}
    _api(page, "POST", "/v1/reminders", {**news, "channel": "log"})
    page.reload()
    show_all(page)
    expect(reminder(page, "News").locator(".priority")).to_have_text(" · bulk (after urgent ones)")

    # Shown before or after its ring failed: the view is read again once that ring is due.
    page.select_option("#filter", "overdue")
    failed = reminder(page, "Nowhere to go")
    expect(failed.locator(".last")).to_have_text(" · last ring: failed", timeout=20_000)
    assert is_refusal(failed.locator(".last"))
    expect(reminder(page, "Delivered fine")).to_have_count(0)

    page.select_option("#filter", "fired")
    expect(reminder(page, "Nowhere to go").locator(".last")).to_have_text(" · last ring: failed")
    delivered = reminder(page, "Delivered fine").locator(".last")
    expect(delivered).to_have_text(" · last ring: delivered", timeout=20_000)  # not "ringing"
    assert not is_refusal(delivered)

    page.select_option("#filter", "today")
    expect(reminder(page, "News")).to_have_count(0)  # rings in 2099
    due = datetime.fromisoformat(str(made["next"])).astimezone(ZoneInfo(ZONE))
    if due.date() == datetime.now(ZoneInfo(ZONE)).date():  # not rung just before midnight
        expect(reminder(page, "Nowhere to go")).to_be_visible()  # rang today, if only to fail
        expect(reminder(page, "Delivered fine")).to_be_visible()


def test_the_edit_box_shows_the_local_time_not_a_utc_instant(page: Page) -> None:
    create(page, "Walk", "in 2 hours")  # kept as an instant
    made = reminder(page, "Walk")
    made.get_by_role("button", name="Edit “Walk”").click()
    when = page.locator(".edit-form").get_by_label("When").input_value()
    expected = datetime.now(ZoneInfo(ZONE)) + timedelta(hours=2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?", when), when
    shown = datetime.strptime(when[:16], "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(ZONE))
    assert abs(shown - expected) < timedelta(minutes=2)
    page.locator(".edit-form").get_by_role("button", name="Save").click()  # nothing changed
    expect(page.locator(".edit-form")).to_have_count(0)


def test_a_twelve_hour_locale_sees_its_own_clock(browser: Browser, server: Server) -> None:
    american = browser.new_context(timezone_id=ZONE, viewport=DESKTOP, locale="en-US")
    try:
        page = american.new_page()
        page.goto(server.link)
        page.fill("#new-say", "Call dad tomorrow at 6pm")
        expect(page.locator("#preview-list li").first).to_contain_text("tomorrow 6:00 PM")
        page.click("#create-button")
        expect(page.locator("#create-answer")).to_contain_text("tomorrow 6:00 PM")
        item = page.locator(".reminder", has_text="Call dad")
        item.get_by_label("Snooze “Call dad”").click()
        assert item.locator(".until").get_attribute("placeholder") == "tomorrow 6:30 PM"
        item.locator(".until").fill("tomorrow 7:15 PM")  # typed as the page shows times
        item.get_by_role("button", name="Snooze until then").click()
        snoozed = page.locator(".reminder", has_text="Call dad")
        expect(snoozed.locator(".next")).to_contain_text("7:15 PM")
        snoozed.get_by_role("button", name="Edit “Call dad”").click()
        when = page.locator(".edit-form").get_by_label("When")
        expect(when).to_have_value(re.compile(r"^\d{4}-\d\d-\d\d 7:15 PM$"))
    finally:
        american.close()


def test_a_reminder_at_a_place_is_made_and_rings_live_when_the_owner_arrives(page: Page) -> None:
    page.fill("#place-name", "Work")
    page.fill("#place-centre", "52.5163, 13.3777")
    page.click("#place-form button[type=submit]")
    work = page.locator(".place", has_text="Work")
    expect(work).to_have_count(1)
    expect(page.locator("#new-place-options")).to_be_hidden()
    page.select_option("#new-where", label="when I arrive at Work")
    expect(page.locator("#new-place-options")).to_be_visible()
    page.fill("#new-say", "water the office plants")
    page.locator("#create").screenshot(path=IMAGES / "page-arrivals.png")
    page.click("#create-button")
    answer = page.locator("#create-answer")
    expect(answer).to_contain_text("it rings when you arrive at Work, once a day")
    made = reminder(page, "water the office plants")
    expect(made.locator(".next")).to_have_text("when you arrive at Work, once a day")
    expect(page.locator("#preview-list li")).to_have_count(0)  # a place has no times to preview

    work.get_by_role("button", name="I'm at Work now").click()
    expect(page.locator("#status")).to_have_text("Arrived at Work: 1 reminder rings.")
    expect(page.locator("#rings")).to_contain_text("water the office plants", timeout=20_000)
    work.get_by_role("button", name="I'm at Work now").click()  # once a day: no more today
    expect(page.locator("#status")).to_have_text("Arrived at Work: 0 reminders ring.")

    made.get_by_role("button", name="Delete “water the office plants”").click()
    made.get_by_role("button", name="Yes, delete “water the office plants”").click()
    expect(made.locator(".answer")).to_have_text("Deleted “water the office plants”.")
    work.get_by_role("button", name="Remove place Work").click()
    expect(work).to_have_count(0)
    expect(page.locator("#new-where option")).to_have_count(1)

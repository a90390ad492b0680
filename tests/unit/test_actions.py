"""Action links (`tocsin.actions`): a token says one action on one ring until one instant,
and any change to what it says, or a key the server no longer holds, refuses it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.channels.firing_factory import firing
from tests.support.keys import TEST_KEYRING
from tocsin.actions import (
    LINK_LIFETIME,
    PATH,
    Action,
    ActionLinks,
    LinkRefused,
    action_links,
    read,
    sign,
)
from tocsin.domain import Channel
from tocsin.keyring import Keyring, new_key

NOW = datetime(2026, 11, 29, 19, 23, 33, tzinfo=UTC)
RING = "06h2hgqf2y7g8415ze4g.1795980213"
OTHER_RING = "06h2hgqf2y7g8415ze4h.1795980213"
LATER = NOW + timedelta(days=7)


def refusal(token: str, keyring: Keyring = TEST_KEYRING, now: datetime = NOW) -> LinkRefused:
    with pytest.raises(LinkRefused) as refused:
        read(keyring, token, now=now)
    return refused.value


@pytest.mark.parametrize("action", list(Action))
def test_a_token_reads_back_as_its_action_ring_and_expiry(action: Action) -> None:
    token = sign(TEST_KEYRING, action, RING, LATER)

    signed = read(TEST_KEYRING, token, now=NOW)

    assert (signed.action, signed.firing_id, signed.expires) == (action, RING, LATER)
    assert signed.reminder_id == "06h2hgqf2y7g8415ze4g"
    assert signed.due == datetime.fromtimestamp(1795980213, UTC)
    assert token.startswith(f"{action.value}.{RING}.")
    assert len(token) < 100  # short enough for a link in a text or a push


def test_every_character_changed_in_the_tag_is_refused_as_forged() -> None:
    token = sign(TEST_KEYRING, Action.DONE, RING, LATER)
    body, tag = token.rsplit(".", 1)

    for at in range(len(tag)):
        flipped = "A" if tag[at] != "A" else "B"
        changed = refusal(f"{body}.{tag[:at]}{flipped}{tag[at + 1 :]}")
        assert (changed.status, changed.slug) == (403, "action-link-forged")


def test_a_done_link_made_a_snooze_is_refused() -> None:
    token = sign(TEST_KEYRING, Action.DONE, RING, LATER)

    swapped = refusal("snooze" + token.removeprefix("done"))

    assert (swapped.status, swapped.slug) == (403, "action-link-forged")


def test_a_link_moved_to_another_ring_is_refused() -> None:
    token = sign(TEST_KEYRING, Action.DONE, RING, LATER)

    moved = refusal(token.replace(RING, OTHER_RING))
    later_ring = refusal(token.replace(RING, RING[:-1] + "4"))

    assert moved.slug == later_ring.slug == "action-link-forged"


def test_a_link_given_a_later_expiry_is_refused() -> None:
    token = sign(TEST_KEYRING, Action.SNOOZE, RING, LATER)
    stamp = str(int(LATER.timestamp()))

    extended = refusal(token.replace(f".{stamp}.", f".{int(stamp) + 86_400}."))

    assert extended.slug == "action-link-forged"


def test_a_link_past_its_expiry_is_gone_and_says_when_it_ended() -> None:
    token = sign(TEST_KEYRING, Action.DONE, RING, LATER)

    assert read(TEST_KEYRING, token, now=LATER - timedelta(seconds=1)).firing_id == RING
    expired = refusal(token, now=LATER)

    assert (expired.status, expired.slug) == (410, "action-link-expired")
    assert "2026-12-06T19:23:33Z" in expired.detail


def test_a_key_rotated_in_keeps_old_links_until_the_old_key_is_dropped() -> None:
    old = new_key()
    token = sign(Keyring.parse(old), Action.DONE, RING, LATER)
    rotated = Keyring.parse(f"{new_key()},{old}")

    assert read(rotated, token, now=NOW).firing_id == RING
    assert sign(rotated, Action.DONE, RING, LATER) != token  # the new first key signs
    dropped = refusal(token, keyring=Keyring.parse(new_key()))
    assert (dropped.status, dropped.slug) == (403, "action-link-key-unknown")


def test_a_server_without_a_key_refuses_every_link_and_makes_none() -> None:
    token = sign(TEST_KEYRING, Action.DONE, RING, LATER)

    assert refusal(token, keyring=Keyring.locked()).slug == "action-link-key-unknown"
    assert action_links("https://tocsin.example.com", Keyring.locked()) is None
    assert action_links(None, TEST_KEYRING) is None


@pytest.mark.parametrize(
    "token",
    [
        "",
        "done",
        f"done.{RING}",
        f"close.{RING}.1796585013.abcdef12.AAAAAAAAAAAAAAAAAAAAAA",
        "done.not-an-id.1795980213.1796585013.abcdef12.AAAAAAAAAAAAAAAAAAAAAA",
        f"done.{RING[:-1]}².1796585013.abcdef12.AAAAAAAAAAAAAAAAAAAAAA",
        f"done.{RING}.1796585013.x.y.z",
        "done." + "a" * 300,
    ],
)
def test_what_is_not_a_link_says_so(token: str) -> None:
    refused = refusal(token)

    assert (refused.status, refused.slug) == (400, "not-an-action-link")


def test_a_rings_links_are_the_same_on_every_retry_and_last_a_week_after_it() -> None:
    ring = firing(channel=Channel.EMAIL)
    links = ActionLinks("https://tocsin.example.com/", TEST_KEYRING)

    made = links.of(ring)

    assert made == links.of(ring._replace(attempts=3))
    assert made.done.startswith(f"https://tocsin.example.com{PATH}done.{ring.id}.")
    token = made.snooze.removeprefix(f"https://tocsin.example.com{PATH}")
    signed = read(TEST_KEYRING, token, now=ring.due_at)
    assert (signed.action, signed.expires) == (Action.SNOOZE, ring.due_at + LINK_LIFETIME)
    assert [a["action"] for a in made.offered()] == ["done", "snooze"]

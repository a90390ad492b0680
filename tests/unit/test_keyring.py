"""Sealing stored secrets: round trip, wrong key, rotation, tampering, key parsing."""

from __future__ import annotations

import pytest

from tocsin.errors import SecretKeyError, SecretKeyMissing, SecretUnreadable
from tocsin.keyring import Keyring, is_sealed, key_id, new_key

OLD, NEW = new_key(), new_key()
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_a_sealed_secret_opens_to_itself_and_hides_it() -> None:
    ring = Keyring.parse(NEW)

    sealed = ring.seal(SECRET)

    assert ring.open(sealed) == SECRET
    assert is_sealed(sealed)
    assert SECRET not in sealed
    assert SECRET.removeprefix("whsec_") not in sealed
    assert sealed.split(":")[:2] == ["v1", ring.ids[0]]
    assert ring.seal(SECRET) != sealed  # a fresh nonce each time


def test_unicode_and_empty_secrets_round_trip() -> None:
    ring = Keyring.parse(NEW)
    for secret in ("", "ünïcødé ✓", "x" * 10_000):
        assert ring.open(ring.seal(secret)) == secret


def test_another_key_does_not_open_it() -> None:
    sealed = Keyring.parse(OLD).seal(SECRET)

    with pytest.raises(SecretUnreadable, match=f"key {key_of(OLD)}, which TOCSIN_SECRET_KEY"):
        Keyring.parse(NEW).open(sealed)


def test_a_key_with_the_same_id_but_other_bytes_fails_the_tag() -> None:
    """Ids are hints: a value whose id matches a key it was not sealed with is refused."""
    sealed = Keyring.parse(OLD).seal(SECRET)
    forged = sealed.replace(key_of(OLD), key_of(NEW), 1)

    with pytest.raises(SecretUnreadable, match="integrity check"):
        Keyring.parse(NEW).open(forged)


def test_rotation_with_two_keys() -> None:
    """The first key seals, every key opens; reseal moves a value to the first key once."""
    old_value = Keyring.parse(OLD).seal(SECRET)
    both = Keyring.parse(f"{NEW},{OLD}")

    assert both.open(old_value) == SECRET
    assert not both.is_current(old_value)
    moved = both.reseal(old_value)
    assert moved is not None
    assert both.is_current(moved)
    assert both.reseal(moved) is None
    assert Keyring.parse(NEW).open(moved) == SECRET
    with pytest.raises(SecretUnreadable):
        Keyring.parse(OLD).open(moved)
    assert both.open(both.seal(SECRET)).startswith("whsec_")
    assert both.seal(SECRET).split(":")[1] == key_of(NEW)


def test_plain_text_from_before_encryption_is_read_and_resealed() -> None:
    ring = Keyring.parse(NEW)

    assert ring.open(SECRET) == SECRET
    assert not ring.is_current(SECRET)
    resealed = ring.reseal(SECRET)
    assert resealed is not None
    assert ring.open(resealed) == SECRET


@pytest.mark.parametrize("part", [2, 3])
def test_tampering_is_detected(part: int) -> None:
    ring = Keyring.parse(NEW)
    pieces = ring.seal(SECRET).split(":")
    flipped = pieces[part][:-2] + ("A" if pieces[part][-2] != "A" else "B") + pieces[part][-1]
    pieces[part] = flipped

    with pytest.raises(SecretUnreadable, match="integrity check"):
        ring.open(":".join(pieces))


@pytest.mark.parametrize(
    "stored", ["v1:", "v1:abc", "v1:a:b:c:d", "v1:" + "0" * 8 + ":!!:??", "v1:x:y:z"]
)
def test_malformed_sealed_values_are_unreadable_not_crashes(stored: str) -> None:
    ring = Keyring.parse(NEW)
    with pytest.raises(SecretUnreadable):
        ring.open(stored.replace("0" * 8, ring.ids[0]))


def test_a_locked_ring_reads_plain_text_only() -> None:
    locked = Keyring.locked()

    assert locked.open(SECRET) == SECRET
    with pytest.raises(SecretKeyMissing, match="TOCSIN_SECRET_KEY is not set"):
        locked.seal(SECRET)
    with pytest.raises(SecretKeyMissing, match="tocsin keys secret-key"):
        locked.open(Keyring.parse(NEW).seal(SECRET))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not set"),
        (" , ", "is not set"),
        ("not-a-key", "key 1 is not 32 bytes"),
        (f"{NEW},{NEW[:-4]}", "key 2 is not 32 bytes"),
        (f"{NEW},{NEW}", "the same key twice"),
        (NEW[:-1] + "!", "key 1 is not 32 bytes"),
    ],
    ids=["empty", "commas", "not-base64", "short", "twice", "bad-character"],  # keys are random
)
def test_a_bad_setting_is_named_and_never_echoed(text: str, message: str) -> None:
    with pytest.raises(SecretKeyError, match=message) as raised:
        Keyring.parse(text)
    assert "TOCSIN_SECRET_KEY" in str(raised.value)
    assert not any(entry.strip() and entry in str(raised.value) for entry in text.split(","))


def test_keys_are_separated_by_commas_or_white_space() -> None:
    ring = Keyring.parse(f" {NEW} ,\n{OLD}\n")
    assert ring.ids == (key_of(NEW), key_of(OLD))
    assert Keyring.parse(f"{NEW} {OLD}").ids == ring.ids


def key_of(text: str) -> str:
    return Keyring.parse(text).ids[0]


def test_key_ids_are_short_and_stable() -> None:
    assert key_id(b"\0" * 32) == key_id(b"\0" * 32)
    assert len(key_id(b"\0" * 32)) == 8
    assert key_id(b"\0" * 32) != key_id(b"\1" * 32)

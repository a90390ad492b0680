"""`tocsin keys rotate`, `revoke` and `revoke-owner`, and owner-token expiry, against a
running server: each refused credential gets a 401 problem saying why, within the few
seconds an API process trusts what it last read."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support.keys import TEST_KEYRING
from tests.support.processes import running
from tocsin.api.security import KEY_TTL
from tocsin.auth import owner_token_secret, sign_owner_token, verify_owner_token
from tocsin.cli import main
from tocsin.store import open_store

pytestmark = pytest.mark.slow
WITHIN = KEY_TTL.total_seconds() + 10  # the cache, and a loaded machine


def _get(base: str, credential: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {credential}"}
    return httpx.get(f"{base}/v1/reminders", params={"owner": "ana"}, headers=headers)


def _refused(base: str, credentials: dict[str, str]) -> dict[str, str]:
    """Wait until every credential is refused; each one's problem detail."""
    details: dict[str, str] = {}
    deadline = time.monotonic() + WITHIN
    while len(details) < len(credentials) and time.monotonic() < deadline:
        for name, credential in credentials.items():
            response = _get(base, credential)
            if response.status_code == 401:
                assert response.headers["content-type"] == "application/problem+json"
                details[name] = response.json()["detail"]
        time.sleep(0.2)
    return details


class Keys:
    """`tocsin keys …` on one database, run in this process (the server runs apart)."""

    def __init__(self, db: str, capsys: pytest.CaptureFixture[str]) -> None:
        self.db = db
        self.capsys = capsys

    def __call__(self, *command: str) -> tuple[int, str, str]:
        status = main(["keys", *command, "--db", self.db])
        out, err = self.capsys.readouterr()
        return status, out, err

    def printed(self, *command: str, prefix: str) -> str:
        status, out, err = self(*command)
        assert status == 0, err
        return next(line for line in out.splitlines() if line.startswith(prefix))


@pytest.fixture
def keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Keys:
    return Keys(str(tmp_path / "tocsin.db"), capsys)


def _short_lived_token(db: str, owner: str, seconds: float) -> str:
    """A token signed as `tocsin keys owner-token` would, but expiring in seconds (the
    command's shortest is a minute)."""

    async def sign() -> str:
        store = await open_store(f"sqlite:///{db}", keyring=TEST_KEYRING)
        try:
            secret = await owner_token_secret(store, None)
        finally:
            await store.close()
        expires = datetime.now(UTC) + timedelta(seconds=seconds)
        return sign_owner_token(owner, expires=expires, secret=secret)

    return asyncio.run(sign())


def test_rotated_revoked_and_expired_credentials_are_refused(keys: Keys) -> None:
    phone = keys.printed("create", "--app", "phone", prefix="tk_")
    calendar = keys.printed("create", "--app", "calendar", prefix="tk_")
    with running("serve", "--db", keys.db) as (base, _):
        token = keys.printed("owner-token", "ana", "--ttl", "1h", prefix="to_")
        expiring = _short_lived_token(keys.db, "ana", seconds=3)
        for credential in (phone, calendar, token, expiring):
            assert _get(base, credential).status_code == 200

        new_phone = keys.printed("rotate", "phone", prefix="tk_")
        assert keys("revoke", "calendar")[0] == 0
        assert keys("revoke-owner", "ana")[0] == 0
        fresh_token = keys.printed("owner-token", "ana", prefix="to_")
        refused = _refused(
            base, {"rotated": phone, "revoked": calendar, "token": token, "expiring": expiring}
        )
        assert refused == {
            "rotated": "the API key or owner token is not valid",
            "revoked": "the API key has been revoked",
            "token": "the owner token has been revoked: ask for a new one",
            "expiring": "the owner token has expired: ask for a new one",
        }
        assert _get(base, new_phone).status_code == 200
        assert _get(base, fresh_token).status_code == 200


def test_keys_commands_say_what_they_did(keys: Keys) -> None:
    keys.printed("create", "--app", "phone", prefix="tk_")
    keys.printed("create", "--app", "calendar", prefix="tk_")

    assert keys("revoke", "phone")[0] == 0
    assert keys("revoke", "phone") == (1, "", "tocsin keys: already revoked: 'phone'\n")
    assert keys("rotate", "nobody") == (1, "", "tocsin keys: no app named 'nobody'\n")
    listed = keys("list")[1].splitlines()
    assert listed[0].split()[:4] == ["APP", "KEY", "CREATED", "REVOKED"]
    calendar, phone = listed[1].split(), listed[2].split()
    assert calendar[3] == "-"
    assert datetime.strptime(phone[3], "%Y-%m-%dT%H:%M:%SZ").year >= 2026
    status, _, err = keys("revoke-owner", "not an owner")
    assert status == 1
    assert "an owner is 1-128 characters" in err


def test_tokens_signed_before_tokens_said_when_still_work() -> None:
    """A token of the earlier form (`to_<owner>.<expiry>.<signature>`) keeps working until
    it expires; a revocation of its owner's tokens refuses it (it cannot say when it was
    signed)."""
    import base64
    import hashlib
    import hmac

    expiry = str(int((datetime.now(UTC) + timedelta(days=1)).timestamp()))
    message = b"\n".join((b"tocsin-owner-token-v1", b"ana", expiry.encode()))
    digest = hmac.new(b"secret", message, hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    old = f"to_YW5h.{expiry}.{signature}"

    assert verify_owner_token(old, secret="secret", now=datetime.now(UTC)) == "ana"
    assert verify_owner_token(old, secret="other", now=datetime.now(UTC)) is None

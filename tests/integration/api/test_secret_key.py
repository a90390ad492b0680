"""The secret key through the real processes: `tocsin serve` makes its key file on first start
and reuses it; a process that needs a key and has none says so in one line; `tocsin keys
rotate-secrets` re-seals a real database; `tocsin keys secret-key` prints a key."""

from __future__ import annotations

import signal
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.keys import TEST_KEYRING
from tests.support.processes import clean_env, running, tocsin
from tests.support.secrets import raw_secrets, set_raw
from tocsin.auth import new_webhook_secret
from tocsin.keyring import Keyring, new_key
from tocsin.store import open_store

pytestmark = pytest.mark.slow

NO_KEY = clean_env(secret_key=None)
HOOK = ("--webhook-url", "http://x/h")


def keys(db: object, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`tocsin keys *args --db db` with `env`."""
    return tocsin("keys", *args, "--db", str(db), env=env)


def _serve_log(db: Path, token: str | None = None) -> str:
    """Start `tocsin serve` on `db` with no key set, check it answers (with `token`, a
    reminder list), stop it; its log."""
    with running("serve", "--db", str(db), env=NO_KEY) as (base, process):
        if token is None:
            assert httpx.get(f"{base}/readyz").status_code == 200
        else:
            mine = httpx.get(f"{base}/v1/reminders", headers={"Authorization": f"Bearer {token}"})
            assert mine.status_code == 200, mine.text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        return process.stdout.read() if process.stdout else ""


async def test_serve_makes_its_key_file_on_first_start_and_reuses_it(tmp_path: Path) -> None:
    db = tmp_path / "tocsin.db"
    key_file = tmp_path / "tocsin.db.key"

    first = _serve_log(db)

    assert "made a secret key" in first
    assert f"key_file={key_file}" in first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    for made_by_serve in (db, tmp_path / "tocsin.db-wal", tmp_path / "tocsin.db-shm"):
        if made_by_serve.exists():  # the WAL files are gone once the last connection closed
            assert stat.S_IMODE(made_by_serve.stat().st_mode) == 0o600, made_by_serve
    ring = Keyring.parse(key_file.read_text())
    made = keys(db, NO_KEY, "create", "--app", "phone", *HOOK)
    assert made.returncode == 0, made.stderr
    token = keys(db, NO_KEY, "owner-token", "ana").stdout.strip()
    key = key_file.read_text()

    second = _serve_log(db, token)  # the token is checked with the secret the file opens

    assert "made a secret key" not in second
    assert key_file.read_text() == key
    raw = await raw_secrets(f"sqlite:///{db}")
    assert set(raw) == {"apps/phone", "secrets/owner-token"}
    assert all(value.startswith(f"v1:{ring.ids[0]}:") for value in raw.values())
    webhook_secret = next(line for line in made.stdout.splitlines() if line.startswith("whsec_"))
    assert webhook_secret not in first + second + made.stderr


async def test_serve_seals_what_an_older_version_kept_in_plain_text(tmp_path: Path) -> None:
    """Upgrading a `make run` database: the first start makes the key and seals it all."""
    db, url = tmp_path / "tocsin.db", f"sqlite:///{tmp_path / 'tocsin.db'}"
    store = await open_store(url, keyring=TEST_KEYRING)
    try:
        await store.migrate()
        await store.ensure_secret("owner-token", "signing")
    finally:
        await store.close()
    await set_raw(url, "secrets", "owner-token", "plain-signing-secret")

    log = _serve_log(db)

    assert "sealed the secrets kept in plain text" in log
    ring = Keyring.parse((tmp_path / "tocsin.db.key").read_text())
    assert (await raw_secrets(url))["secrets/owner-token"].startswith(f"v1:{ring.ids[0]}:")


@pytest.mark.parametrize(
    "command",
    [
        ("worker",),
        ("keys", "create", "--app", "phone", "--webhook-url", "http://x/h"),
        ("keys", "owner-token", "ana"),
        ("keys", "rotate-secrets"),
        ("serve", "--host", "192.0.2.10"),  # beyond loopback: no key file is made
    ],
)
def test_a_process_that_needs_the_key_and_has_none_says_so(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    done = tocsin(*command, "--db", str(tmp_path / "tocsin.db"), env=NO_KEY)

    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "TOCSIN_SECRET_KEY is not set and there is no key file" in last
    assert "tocsin keys secret-key" in last
    assert not (tmp_path / "tocsin.db.key").exists()


@pytest.mark.postgres
def test_on_postgres_the_api_needs_the_key(pg_migrated_url: str) -> None:
    done = tocsin("api", "--db", pg_migrated_url, env=NO_KEY)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "tocsin: TOCSIN_SECRET_KEY is not set: this process reads or writes secrets that "
        "Tocsin keeps encrypted with it; make one with `tocsin keys secret-key` and give "
        "every process of this database the same value"
    )


def test_a_key_that_opens_nothing_stored_is_refused_at_start(tmp_path: Path) -> None:
    db = str(tmp_path / "tocsin.db")
    assert tocsin("keys", "owner-token", "ana", "--db", db).returncode == 0

    other = clean_env(secret_key=new_key())
    done = tocsin("api", "--db", db, env=other)

    assert done.returncode == 1
    assert "does not open the secrets this database keeps" in done.stderr
    assert f"sealed with key {TEST_KEYRING.ids[0]}" in done.stderr


def test_secret_key_prints_a_fresh_key() -> None:
    first, second = tocsin("keys", "secret-key"), tocsin("keys", "secret-key")

    assert first.returncode == 0
    assert Keyring.parse(first.stdout).ids != Keyring.parse(second.stdout).ids


async def test_rotate_secrets_on_a_real_database(migrated_db_url: str) -> None:
    """Rotation end to end: plain text from an older version and values sealed with the old
    key all end up sealed with the new one; the old key is then not needed."""
    old, new = new_key(), new_key()
    store = await open_store(migrated_db_url, keyring=Keyring.parse(old))
    try:
        await store.migrate()
    finally:
        await store.close()
    with_old = clean_env(secret_key=old)
    made = keys(migrated_db_url, with_old, "create", "--app", "phone", *HOOK)
    assert made.returncode == 0, made.stderr
    keys(migrated_db_url, with_old, "create", "--app", "legacy", *HOOK)
    await set_raw(migrated_db_url, "apps", "legacy", new_webhook_secret())  # as before sealing

    missing = keys(migrated_db_url, clean_env(secret_key=new), "rotate-secrets")
    rotated = keys(migrated_db_url, clean_env(secret_key=f"{new},{old}"), "rotate-secrets")

    assert missing.returncode == 1
    assert f"sealed with key {Keyring.parse(old).ids[0]}" in missing.stderr
    assert rotated.returncode == 0, rotated.stderr
    assert rotated.stdout.startswith("re-sealed 3 secrets")
    raw = await raw_secrets(migrated_db_url)
    assert len(raw) == 3
    assert all(value.startswith(f"v1:{Keyring.parse(new).ids[0]}:") for value in raw.values())
    signed = keys(migrated_db_url, clean_env(secret_key=new), "owner-token", "ana")
    assert signed.returncode == 0, signed.stderr

"""No command prints a credential from its settings: `tocsin config` shows each URL setting
without its password, user token or query values and a keyword database string without its
password; `tocsin migrate`, `tocsin api` and `tocsin worker` do not repeat them in the error
that says why they cannot start. Each run as a real process, its whole output searched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import clean_env, free_port, tocsin
from tocsin.masking import MASK

pytestmark = pytest.mark.slow

# Each credential is written once, and found nowhere else in a command's output.
SECRETS = {
    "db": "Db-Pass-7f3a",
    "hook_user": "Hook-Pass-91c2",
    "hook_token": "Hook-Token-55e0",
    "sms": "Sms-Pass-2b8d",
    "sms_key": "Sms-Key-04aa",
    "apns": "Apns-Token-c7e1",
}
KEYWORD_DSN = f"host=127.0.0.1 port={free_port()} user=tocsin password={SECRETS['db']}"
URLS = {
    "TOCSIN_WEBHOOK_URL": (
        f"https://ops:{SECRETS['hook_user']}@hooks.example.com/ring?token={SECRETS['hook_token']}"
    ),
    "TOCSIN_SMS_BASE_URL": f"https://acct:{SECRETS['sms']}@sms.example.com/?key={SECRETS['sms_key']}",
    "TOCSIN_APNS_BASE_URL": f"https://{SECRETS['apns']}@apns.example.com",
}


def assert_no_secret(output: str) -> None:
    for name, value in SECRETS.items():
        assert value not in output, f"{name} shown: {output}"


def test_config_masks_the_credentials_in_every_url_and_a_keyword_database_string() -> None:
    done = tocsin("config", env=clean_env(TOCSIN_DATABASE_URL=KEYWORD_DSN, **URLS))

    assert done.returncode == 0, done.stderr
    assert_no_secret(done.stdout + done.stderr)
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert lines["TOCSIN_DATABASE_URL"] == KEYWORD_DSN.replace(SECRETS["db"], MASK)
    assert lines["TOCSIN_WEBHOOK_URL"] == (
        f"https://ops:{MASK}@hooks.example.com/ring?token={MASK}"
    )
    assert lines["TOCSIN_SMS_BASE_URL"] == f"https://acct:{MASK}@sms.example.com/?key={MASK}"
    assert lines["TOCSIN_APNS_BASE_URL"] == f"https://{MASK}@apns.example.com"


def test_config_shows_a_database_file_as_written() -> None:
    done = tocsin("config", env=clean_env(TOCSIN_DATABASE_URL="sqlite:///./tocsin.db"))
    assert "TOCSIN_DATABASE_URL=sqlite:///./tocsin.db\n" in done.stdout


@pytest.mark.parametrize("given", ["environment", "--db"])
def test_migrate_does_not_repeat_a_keyword_strings_password(given: str) -> None:
    if given == "--db":
        done = tocsin("migrate", "--db", KEYWORD_DSN)
    else:
        done = tocsin("migrate", env=clean_env(TOCSIN_DATABASE_URL=KEYWORD_DSN))

    assert done.returncode == 1
    assert "unsupported database URL" in done.stderr
    assert f"password={MASK}" in done.stderr
    assert_no_secret(done.stdout + done.stderr)


def test_the_servers_do_not_repeat_the_databases_password_when_they_cannot_start(
    tmp_path: Path,
) -> None:
    unreachable = f"postgresql://tocsin:{SECRETS['db']}@127.0.0.1:{free_port()}/tocsin"
    missing_dir = f"sqlite:///{tmp_path}/gone/t.db?password={SECRETS['db']}"
    runs = [
        tocsin("api", env=clean_env(TOCSIN_DATABASE_URL=KEYWORD_DSN)),
        tocsin("api", "--db", unreachable),
        tocsin("migrate", "--db", unreachable),
        tocsin("worker", env=clean_env(TOCSIN_DATABASE_URL=missing_dir)),
    ]

    assert [done.returncode for done in runs] == [1, 1, 1, 2]
    for done in runs:
        assert_no_secret(done.stdout + done.stderr)
    assert f"postgresql://tocsin:{MASK}@127.0.0.1" in runs[1].stderr
    assert f"password={MASK}" in runs[3].stderr

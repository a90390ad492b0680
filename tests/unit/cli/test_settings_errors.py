"""A wrong setting stops every command with status 2 and one line naming it; `tocsin config`
shows the effective settings with every secret masked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.processes import clean_env, tocsin
from tocsin.cli import main
from tocsin.cli.config import reference_table, section_of
from tocsin.masking import MASK
from tocsin.settings import Settings, env_name

SERVER_COMMANDS = [
    ["serve"],
    ["api"],
    ["api", "--workers", "2"],
    ["worker"],
    ["migrate"],
    ["keys", "create", "--app", "phone"],
    ["keys", "list"],
    ["keys", "revoke", "phone"],
    ["keys", "rotate", "phone"],
    ["keys", "owner-token", "ana"],
    ["keys", "revoke-owner", "ana"],
    ["keys", "rotate-secrets"],
    ["config"],
]
WRONG = [
    ("TOCSIN_PARTS", "3", "TOCSIN_PARTS: must divide 1024"),
    ("TOCSIN_PORT", "eighty", "TOCSIN_PORT: input should be a valid integer"),
    ("TOCSIN_LOG_FORMAT", "xml", "TOCSIN_LOG_FORMAT: input should be 'kv' or 'json'"),
    ("TOCSIN_LOG_LEVEL", "loud", "TOCSIN_LOG_LEVEL: must be one of DEBUG"),
    ("TOCSIN_WEBHOOK_URL", "http://10.0.0.1/hook", "TOCSIN_WEBHOOK_URL: 10.0.0.1 is not"),
]
# Every setting that is a path, found by its type, so that a new one is checked as well.
PATH_SETTINGS = sorted(
    name for name, info in Settings.model_fields.items() if "Path" in str(info.annotation)
)
CA_SETTINGS = [name for name in PATH_SETTINGS if name.endswith("_ca_file")]


@pytest.fixture(autouse=True)
def _only_the_tests_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(f"TOCSIN_{name.upper()}", raising=False)
    monkeypatch.setenv("TOCSIN_DATABASE_URL", f"sqlite:///{tmp_path / 'never-made.db'}")


@pytest.mark.parametrize("command", SERVER_COMMANDS, ids=" ".join)
def test_each_command_names_the_wrong_setting_on_one_line(
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TOCSIN_PARTS", "3")
    assert main(command) == 2
    said = "TOCSIN_PARTS: must divide 1024 (1, 2, 4, … 1024) (got '3')"
    assert capsys.readouterr().err == f"tocsin {command[0]}: {said}\n"
    assert not (tmp_path / "never-made.db").exists()  # refused before opening anything


@pytest.mark.parametrize(("name", "value", "said"), WRONG, ids=[w[0] for w in WRONG])
def test_each_kind_of_mistake_is_said_plainly(
    name: str,
    value: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tocsin worker: {said}")
    assert err.count("\n") == 1


def test_a_real_process_exits_2_without_a_traceback() -> None:
    done = tocsin("worker", env=clean_env(TOCSIN_LEASE_SECONDS="-5"))
    assert done.returncode == 2
    assert done.stderr == (
        "tocsin worker: TOCSIN_LEASE_SECONDS: input should be greater than 0 (got '-5')\n"
    )


def test_path_settings_are_found() -> None:
    assert {"apns_key_file", "fcm_service_account_file", "vapid_private_key_file"} <= set(
        PATH_SETTINGS
    )
    assert set(CA_SETTINGS) == {
        "apns_ca_file",
        "fcm_ca_file",
        "sms_ca_file",
        "smtp_ca_file",
        "webpush_ca_file",
    }


@pytest.mark.parametrize("name", PATH_SETTINGS)
@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("empty", "is empty: give the path of a file, or leave it unset"),
        ("a directory", "is a directory, not a file"),
        ("a missing file", "no such file"),
    ],
)
def test_every_path_setting_refuses_an_empty_or_wrong_path_on_one_line(
    name: str,
    case: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    value = {"empty": "", "a directory": str(tmp_path), "a missing file": str(tmp_path / "x")}
    monkeypatch.setenv(env_name(name), value[case])
    assert main(["worker"]) == 2
    assert capsys.readouterr().err == (
        f"tocsin worker: {env_name(name)}: {said} (got {value[case]!r})\n"
    )


@pytest.mark.parametrize("command", SERVER_COMMANDS, ids=" ".join)
def test_an_empty_path_stops_each_command(
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TOCSIN_APNS_CA_FILE", "")
    assert main(command) == 2
    said = "TOCSIN_APNS_CA_FILE: is empty: give the path of a file, or leave it unset (got '')"
    assert capsys.readouterr().err == f"tocsin {command[0]}: {said}\n"
    assert not (tmp_path / "never-made.db").exists()


@pytest.mark.parametrize("name", CA_SETTINGS)
def test_a_ca_file_must_hold_a_certificate(
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    monkeypatch.setenv(env_name(name), str(not_pem))
    assert main(["config"]) == 2
    said = f"{env_name(name)}: holds no PEM certificate to trust (got {str(not_pem)!r})"
    assert capsys.readouterr().err == f"tocsin config: {said}\n"


def test_a_file_the_process_cannot_read_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    key = tmp_path / "apns.p8"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    key.chmod(0)
    if os.geteuid() == 0:  # root reads every file but a write-only kernel setting
        key = Path("/proc/sys/vm/drop_caches")
        if not key.exists():
            pytest.skip("no file that root cannot read on this system")
    monkeypatch.setenv("TOCSIN_APNS_KEY_FILE", str(key))
    assert main(["config"]) == 2
    said = f"TOCSIN_APNS_KEY_FILE: cannot be read (Permission denied) (got {str(key)!r})"
    assert capsys.readouterr().err == f"tocsin config: {said}\n"


def test_a_real_server_with_an_empty_ca_file_exits_2_without_a_traceback(tmp_path: Path) -> None:
    env = clean_env(TOCSIN_APNS_CA_FILE="", TOCSIN_DATABASE_URL=f"sqlite:///{tmp_path}/t.db")
    done = tocsin("serve", "--port", "0", env=env)
    assert done.returncode == 2
    assert done.stderr == (
        "tocsin serve: TOCSIN_APNS_CA_FILE: is empty: give the path of a file, or leave it "
        "unset (got '')\n"
    )


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite:///", "the SQLite URL names no file"),
        ("sqlite:///{tmp}", "{tmp} is a directory, not a database file"),
        ("sqlite:///{tmp}/gone/t.db", "there is no directory {tmp}/gone for the database file"),
    ],
)
def test_a_database_file_that_cannot_be_made_is_said_plainly(
    url: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    url, said = url.format(tmp=tmp_path), said.format(tmp=tmp_path)
    monkeypatch.setenv("TOCSIN_DATABASE_URL", url)
    assert main(["worker"]) == 2
    assert capsys.readouterr().err == f"tocsin worker: TOCSIN_DATABASE_URL: {said} (got {url!r})\n"


def test_the_worker_logs_in_the_format_of_the_environment(tmp_path: Path) -> None:
    env = clean_env(secret_key=None, TOCSIN_LOG_FORMAT="json")
    done = tocsin("worker", "--db", str(tmp_path / "tocsin.db"), env=env)

    assert done.returncode == 1  # no secret key: it says so in its log, then on stderr
    logged = json.loads(done.stderr.splitlines()[0])
    assert (logged["logger"], logged["level"]) == ("tocsin.worker", "ERROR")
    assert logged["message"].startswith("not starting: TOCSIN_SECRET_KEY is not set")


def test_config_masks_every_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = {
        "TOCSIN_SECRET": "owner-token-signing",
        "TOCSIN_SECRET_KEY": "the-secret-key",
        "TOCSIN_WEBHOOK_SECRET": "whsec_c2lnbmluZw==",
        "TOCSIN_SMTP_PASSWORD": "smtp-password",
        "TOCSIN_SMS_AUTH_TOKEN": "twilio-token",
        "TOCSIN_VAPID_PRIVATE_KEY": "vapid-private",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TOCSIN_DATABASE_URL", "postgresql://tocsin:db-password@db:5432/tocsin")
    monkeypatch.setenv("TOCSIN_SMTP_HOST", "smtp.example.com")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split("=", 1) for line in out.splitlines())
    for name, value in secrets.items():
        assert lines[name] == MASK
        assert value not in out
    assert "db-password" not in out
    assert lines["TOCSIN_DATABASE_URL"] == f"postgresql://tocsin:{MASK}@db:5432/tocsin"
    assert lines["TOCSIN_SMTP_HOST"] == "smtp.example.com"
    assert lines["TOCSIN_PARTS"] == "16"  # effective: the PostgreSQL default
    assert lines["TOCSIN_SMTP_USERNAME"] == ""  # unset
    assert set(lines) == {f"TOCSIN_{name.upper()}" for name in Settings.model_fields}


def test_config_masks_a_password_in_the_database_urls_query(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://db:5432/tocsin?user=tocsin&password=db-secret&sslpassword=key-secret"
    monkeypatch.setenv("TOCSIN_DATABASE_URL", url)
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split("=", 1) for line in out.splitlines())
    assert "db-secret" not in out
    assert "key-secret" not in out
    assert lines["TOCSIN_DATABASE_URL"] == (
        f"postgresql://db:5432/tocsin?user=tocsin&password={MASK}&sslpassword={MASK}"
    )


def test_every_setting_has_a_meaning() -> None:
    vague = [name for name, info in Settings.model_fields.items() if not info.description]
    assert not vague, f"settings without a description: {vague}"


def test_the_operations_guide_lists_the_settings_of_this_code() -> None:
    guide = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
    assert section_of(guide.read_text(encoding="utf-8")) == reference_table(), (
        "docs/operations.md is stale: run `tocsin config --markdown docs/operations.md`"
    )


def test_config_markdown_rewrites_only_the_marked_section(tmp_path: Path) -> None:
    guide = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
    copy = tmp_path / "operations.md"
    text = guide.read_text(encoding="utf-8")
    begin, _, rest = text.partition(reference_table())
    copy.write_text(begin + "| stale |\n" + rest, encoding="utf-8")
    assert main(["config", "--markdown", str(copy)]) == 0
    assert copy.read_text(encoding="utf-8") == text

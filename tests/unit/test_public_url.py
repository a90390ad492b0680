"""Where a ring's action links point: `TOCSIN_PUBLIC_URL`, else a loopback server's own
address, else nowhere (no links)."""

from __future__ import annotations

import pytest

from tocsin.settings import Settings, SettingsInvalid, load_settings


@pytest.fixture(autouse=True)
def _no_tocsin_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOCSIN_PUBLIC_URL", "TOCSIN_HOST", "TOCSIN_PORT"):
        monkeypatch.delenv(name, raising=False)


def test_the_public_url_wins_without_its_last_slash() -> None:
    given = Settings(public_url="https://tocsin.example.com/", host="10.0.0.5")

    assert given.links_base_url == "https://tocsin.example.com"


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("127.0.0.1", "http://127.0.0.1:8000"),
        ("localhost", "http://localhost:8000"),
        ("::1", "http://[::1]:8000"),
        ("10.0.0.5", None),  # reached by some name this process cannot know
        ("tocsin.internal", None),
    ],
)
def test_without_one_only_a_loopback_server_knows_its_address(host: str, base: str | None) -> None:
    assert Settings(host=host).links_base_url == base


@pytest.mark.parametrize(
    "url",
    ["ftp://tocsin.example.com", "tocsin.example.com", "https://a@b.example", "https://x/?a=1"],
)
def test_a_public_url_that_is_not_a_plain_address_is_refused(url: str) -> None:
    with pytest.raises(SettingsInvalid, match="TOCSIN_PUBLIC_URL"):
        load_settings(public_url=url)

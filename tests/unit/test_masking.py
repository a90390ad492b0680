"""Credentials are masked out of a URL, a keyword database string and a message quoting
either; what holds none is shown as written."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.masking import MASK, masked

# Secrets are upper case and the rest lower case, so that no secret is found by chance in a
# host or a path.
plain = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
secret = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=4, max_size=16)
hosts = st.lists(plain, min_size=1, max_size=3).map(".".join)
paths = st.lists(plain, max_size=3).map(lambda parts: "".join("/" + p for p in parts))
DATABASE_SECRETS = ["password", "sslpassword", "api_key", "token", "client_secret", "sig"]


@given(
    st.sampled_from(["https", "http", "json", "postgresql", "postgres"]),
    plain,
    secret,
    hosts,
    paths,
    st.lists(st.tuples(st.sampled_from(DATABASE_SECRETS), secret), max_size=3),
)
def test_a_urls_password_and_secret_parameters_are_masked(
    scheme: str,
    user: str,
    password: str,
    host: str,
    path: str,
    parameters: list[tuple[str, str]],
) -> None:
    query = "&".join(f"{name}={value}" for name, value in [("sslmode", "require"), *parameters])
    url = f"{scheme}://{user}:{password}@{host}:5432{path}?{query}"

    shown = masked(url)

    assert password not in shown
    assert all(value not in shown for _, value in parameters)
    assert shown.startswith(f"{scheme}://{user}:{MASK}@{host}:5432{path}?")
    assert masked(shown) == shown


@given(plain, secret, hosts, paths)
def test_every_query_value_of_a_url_other_than_a_databases_is_masked(
    name: str, value: str, host: str, path: str
) -> None:
    url = f"https://{host}{path}?{name}={value}&{value}#{value}"
    assert masked(url) == f"https://{host}{path}?{name}={MASK}&{MASK}#{MASK}"


@given(secret, hosts)
def test_a_user_part_alone_is_a_token_over_http_and_a_role_for_a_database(
    token: str, host: str
) -> None:
    assert masked(f"https://{token}@{host}/hook") == f"https://{MASK}@{host}/hook"
    assert masked(f"postgresql://tocsin@{host}/db") == f"postgresql://tocsin@{host}/db"


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///./tocsin.db",
        "sqlite:////var/lib/tocsin/tocsin.db",
        "postgresql://db1:5432,db2:5432/tocsin?target_session_attrs=read-write&sslmode=verify-full",
        "https://api.push.apple.com",
        "https://fcm.googleapis.com/",
        "",
        "host=db user=tocsin dbname=tocsin",
    ],
)
def test_what_holds_no_credential_is_shown_as_written(url: str) -> None:
    assert masked(url) == url


@given(
    st.permutations(["host=db", "user=tocsin", "dbname=tocsin", "PASSWORD"]),
    secret,
    st.sampled_from(["password={}", "password = {}", "password='{} x'", "sslpassword={}"]),
)
def test_a_keyword_strings_passwords_are_masked(order: list[str], value: str, form: str) -> None:
    dsn = " ".join(form.format(value) if word == "PASSWORD" else word for word in order)
    shown = masked(dsn)
    assert value not in shown
    assert "host=db" in shown
    assert "user=tocsin" in shown
    assert MASK in shown


@given(secret)
def test_a_message_quoting_a_url_or_a_keyword_string_is_masked(value: str) -> None:
    messages = [
        f"unsupported database URL 'host=db password={value}': use sqlite:///…",
        f"cannot reach the database postgresql://tocsin:{value}@db/tocsin: refused",
        f"(got 'https://hooks.example/x?token={value}')",
        f"unsupported database URL 'postgresql://u:{value}'x@db/t': use …",
    ]
    for message in messages:
        assert value not in masked(message)
    assert masked(messages[2]) == f"(got 'https://hooks.example/x?token={MASK}')"

"""Credentials masked out of a setting's value before it is shown: `tocsin config`, an error
that names the database, a refused setting's "(got …)".

A URL keeps its scheme, host, port and path as written, and loses:
- its password (`user:********@`), or a user part without one, which for HTTP is a token
  (`https://********@hooks.example`); a database's user is a role, and is kept;
- every query value (a bare `?TOKEN` too), except a database URL's: its query carries
  settings an operator checks (`sslmode`, `target_session_attrs`), so there only the
  parameters whose name says secret (`password`, `sslpassword`, `token`, `key`…) are masked;
- its fragment, which may hold a token as well.
Text that is not a URL is a libpq keyword string (`host=db user=tocsin password=…`) as far
as masking goes: its `password` and `sslpassword` values are masked, quoted or not.
"""

from __future__ import annotations

import re

MASK = "********"

_DATABASES = ("postgresql", "postgres", "sqlite")
# Words that make a query parameter's value a secret in a database URL.
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key", "sig", "auth", "cred")
_KEYWORD_SECRET = re.compile(
    r"(?P<name>\b(?:ssl)?password\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'?|[^\s'\"]+)",
    re.IGNORECASE,
)
# A URL within text: it runs to white space, less the punctuation that ends a quote or a
# sentence around it (`'…':`), so that a password holding a quote is still all inside it.
_URL = re.compile(r"""(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"<>`]*?)(?=['")\]},;:.]*(?:[\s"<>`]|$))""")


def masked(text: str) -> str:
    """`text` (a setting's value, or a message naming one) with every credential in it
    replaced by MASK: in each URL it holds, and in what lies between them."""
    pieces = _URL.split(text)  # the URLs are the odd pieces
    return "".join(
        _masked_url(piece) if index % 2 else _KEYWORD_SECRET.sub(_keyword, piece)
        for index, piece in enumerate(pieces)
    )


def _keyword(match: re.Match[str]) -> str:
    return match["name"] + MASK


def _masked_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    database = scheme.lower() in _DATABASES
    end = len(rest) if (found := re.search(r"[/?#]", rest)) is None else found.start()
    authority, tail = rest[:end], rest[end:]
    return f"{scheme}://{_authority(authority, database=database)}{_tail(tail, database=database)}"


def _authority(authority: str, *, database: bool) -> str:
    userinfo, at, host = authority.rpartition("@")
    if not at:
        return authority
    user, colon, _ = userinfo.partition(":")
    if colon:
        return f"{user}:{MASK}@{host}"
    return f"{userinfo if database else MASK}@{host}"


def _tail(tail: str, *, database: bool) -> str:
    """The path as written, the query with its values masked, the fragment masked."""
    path, question, query = tail.partition("?")
    if not question:
        path, hash_, _ = tail.partition("#")
        return path + (f"#{MASK}" if hash_ else "")
    query, hash_, _ = query.partition("#")
    pairs = [_pair(pair, database=database) for pair in query.split("&")]
    return f"{path}?{'&'.join(pairs)}" + (f"#{MASK}" if hash_ else "")


def _pair(pair: str, *, database: bool) -> str:
    name, equals, _ = pair.partition("=")
    if not pair or (database and not any(word in name.lower() for word in _SECRET_WORDS)):
        return pair
    return f"{name}={MASK}" if equals else MASK  # a bare `?TOKEN` too

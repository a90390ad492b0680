"""What the API's per-owner resources (contacts, places) share: who may manage an owner's
things, their keyset pages, and which of them a caller may see. Apps are tenants: an app key
sees what it saved, of any owner; an owner token everything of its owner; an admin key all;
anything else is a 404, as if it did not exist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from tocsin.api import render
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.api.security import Principal


class Owned(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def source(self) -> str | None: ...


T = TypeVar("T", bound=Owned)


def may_manage(principal: Principal, owner: str) -> None:
    """404 unless `principal` may manage `owner`'s things."""
    if not principal.may_see(owner):
        raise Problem(404, "not-found", f"no owner {owner} for this token")


def owner_for(principal: Principal, owner: str | None) -> str:
    """The owner a request is about: the token's own for an owner token, else as given."""
    if principal.owner is not None:
        if owner is not None and owner != principal.owner:
            detail = "an owner token may only act for its own owner"
            raise Problem(403, "forbidden", detail, errors=[FieldError("owner", detail)])
        return principal.owner
    if owner is None:
        raise invalid([FieldError("owner", "required")])
    return owner


def saver(principal: Principal) -> str | None:
    """Whose a thing saved by `principal` is: None for the owner's own (his token), else
    the app whose key saved it."""
    return None if principal.owner is not None else principal.source


def over_cap(cap: int, owner: str, source: str | None, things: str) -> Problem:
    """The 409 for `source` (an app, or None: the owner) that has saved `cap` `things`
    (`contacts`, `places`) for `owner`, the most `TOCSIN_MAX_<THINGS>_PER_OWNER` allows."""
    who = "the owner" if source is None else f"app {source}"
    detail = (
        f"{who} has saved {cap} {things} for {owner}, the most allowed "
        f"(TOCSIN_MAX_{things.upper()}_PER_OWNER): delete one first"
    )
    return Problem(409, f"too-many-{things}", detail)


def after(cursor: str | None) -> str | None:
    """The id a page's `cursor` continues after; a 422 naming `cursor` for one this API did
    not give."""
    if not cursor:
        return None
    try:
        return render.decode_cursor(cursor)
    except ValueError:
        raise invalid([FieldError("cursor", "not a cursor this API gave")]) from None


def page(rows: Sequence[T], limit: int) -> tuple[list[T], str | None]:
    """The first `limit` of `rows` (read `limit + 1`), and the cursor of the next page when
    there is one."""
    shown = list(rows[:limit])
    return shown, render.encode_cursor(shown[-1].id) if len(rows) > limit else None


def visible(found: Owned, principal: Principal, owner: str) -> bool:
    """Whether `found` is `owner`'s and `principal` may see it (its app saved it, or the
    principal is the owner or an admin)."""
    return found.owner == owner and principal.tenant in (None, found.source)

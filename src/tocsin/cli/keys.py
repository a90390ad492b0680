"""`tocsin keys`: create API keys for apps, list, revoke and rotate them; sign owner tokens
and revoke an owner's; make VAPID keys; make a secret key and re-seal the stored secrets
with it (rotation)."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tocsin.auth import (
    hash_api_key,
    new_api_key,
    new_app,
    owner_token_secret,
    sign_owner_token,
)
from tocsin.channels.webpush import new_vapid_keys
from tocsin.cli.startup import StartupError, add_database_arguments, open_ready_store, settings_from
from tocsin.domain import Priority
from tocsin.errors import InvalidInput, SecretKeyError, StoreError
from tocsin.keyring import new_key
from tocsin.outbound import check_url
from tocsin.settings import Settings
from tocsin.store.ports import AppStore
from tocsin.time import parse_duration

TTL_MIN = 60
_TIME = "%Y-%m-%dT%H:%M:%SZ"
TTL_MAX = 366 * 86400
# Passes of `rotate-secrets`: the second only re-reads what changed during the first (a
# value written meanwhile); more means some process still seals with another key first.
ROTATION_PASSES = 3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("keys", help="API keys and owner tokens")
    commands = parser.add_subparsers(dest="keys_command", metavar="SUBCOMMAND", required=True)

    create = commands.add_parser("create", help="create an app's API key (printed once)")
    create.add_argument("--app", required=True, help="the app's name, recorded as `source`")
    create.add_argument("--webhook-url", help="where the app's webhook reminders are sent")
    create.add_argument(
        "--admin",
        action="store_true",
        help="an operator's key: sees and changes every app's reminders (an app key sees its own)",
    )
    create.add_argument(
        "--priority",
        choices=[priority.value for priority in Priority],
        default=Priority.URGENT.value,
        help="of the reminders the app saves without one (default urgent; bulk for digests "
        "and newsletters: urgent rings go first)",
    )
    add_database_arguments(create)
    create.set_defaults(handler=_handler(_create))

    listing = commands.add_parser("list", help="list the apps that have keys")
    add_database_arguments(listing)
    listing.set_defaults(handler=_handler(_list))

    revoke = commands.add_parser(
        "revoke",
        help="refuse an app's key from now on (its reminders still ring; `rotate` gives it "
        "a new key)",
    )
    revoke.add_argument("app", help="the app's name")
    add_database_arguments(revoke)
    revoke.set_defaults(handler=_handler(_revoke))

    rotate = commands.add_parser(
        "rotate", help="give an app a new key (printed once); its old key is refused"
    )
    rotate.add_argument("app", help="the app's name")
    add_database_arguments(rotate)
    rotate.set_defaults(handler=_handler(_rotate))

    token = commands.add_parser("owner-token", help="sign a token for one owner's own page")
    token.add_argument("owner", help="the owner the token may see and change")
    token.add_argument("--ttl", default="30d", help="how long it is valid (default 30d)")
    add_database_arguments(token)
    token.set_defaults(handler=_handler(_owner_token))

    revoke_owner = commands.add_parser(
        "revoke-owner", help="refuse every owner token of one owner signed until now"
    )
    revoke_owner.add_argument("owner", help="the owner whose tokens to refuse")
    add_database_arguments(revoke_owner)
    revoke_owner.set_defaults(handler=_handler(_revoke_owner))

    vapid = commands.add_parser("vapid", help="make a VAPID key pair for the webpush channel")
    vapid.set_defaults(handler=_vapid)
    secret_key = commands.add_parser(
        "secret-key", help="print a new key for TOCSIN_SECRET_KEY (stores nothing)"
    )
    secret_key.set_defaults(handler=_secret_key)

    rotate = commands.add_parser(
        "rotate-secrets",
        help="seal every stored secret with the first key of TOCSIN_SECRET_KEY (safe while "
        "servers run; also seals secrets stored in plain text by older versions)",
    )
    add_database_arguments(rotate)
    rotate.set_defaults(handler=_handler(_rotate_secrets))


Command = Callable[[AppStore, Settings, argparse.Namespace], Awaitable[int]]


def _handler(command: Command) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        settings = settings_from(args)
        try:
            return asyncio.run(_with_store(command, settings, args))
        except (StartupError, StoreError, SecretKeyError, InvalidInput, ValueError) as error:
            print(f"tocsin keys: {error}", file=sys.stderr)
            return 1

    return handle


async def _with_store(command: Command, settings: Settings, args: argparse.Namespace) -> int:
    store = await open_ready_store(settings, migrate=args.migrate)
    try:
        return await command(store, settings, args)
    finally:
        await store.close()


async def _create(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    if await store.find_app(name=args.app) is not None:
        print(f"tocsin keys: an app named {args.app!r} exists already", file=sys.stderr)
        return 1
    if args.webhook_url is not None:
        check_url(
            args.webhook_url, allow_private=settings.allow_private_urls, field="--webhook-url"
        )
    app, key = new_app(
        args.app,
        webhook_url=args.webhook_url,
        now=datetime.now(UTC),
        admin=args.admin,
        priority=Priority(args.priority),
    )
    await store.add_app(app)
    kind = "Admin key" if app.admin else "API key"
    print(f"{kind} for {app.name} (shown once; keep it secret):")
    print(key)
    if app.webhook_secret:
        print(f"Webhook signing secret for {app.webhook_url} (Standard Webhooks):")
        print(app.webhook_secret)
    return 0


async def _list(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    apps = await store.list_apps()
    if not apps:
        print("no apps: the API runs without keys (tocsin keys create --app NAME)")
        return 0
    print(f"{'APP':<24} {'KEY':<14} {'CREATED':<20} {'REVOKED':<20} {'WEBHOOK':<8} WEBHOOK URL")
    for app in apps:
        created = app.created_at.strftime(_TIME)
        revoked = app.revoked_at.strftime(_TIME) if app.revoked_at else "-"
        state = "-" if not app.webhook_url else "disabled" if app.webhook_disabled else "on"
        name = f"{app.name} (admin)" if app.admin else app.name
        if app.priority is Priority.BULK:
            name += " (bulk)"
        print(
            f"{name:<24} {app.key_prefix + '…':<14} {created:<20} {revoked:<20} {state:<8} "
            f"{app.webhook_url or '-'}"
        )
    return 0


async def _revoke(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    if not await store.revoke_app(args.app, datetime.now(UTC)):
        app = await store.find_app(name=args.app)
        said = "no app named" if app is None else "already revoked:"
        print(f"tocsin keys: {said} {args.app!r}", file=sys.stderr)
        return 1
    print(
        f"revoked the key of {args.app}: refused within {_key_cache_seconds()} s by every API "
        "process; its reminders still ring"
    )
    return 0


async def _rotate(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    key = new_api_key()
    if not await store.replace_app_key(args.app, key_hash=hash_api_key(key), key_prefix=key[:11]):
        print(f"tocsin keys: no app named {args.app!r}", file=sys.stderr)
        return 1
    print(
        f"New API key for {args.app} (shown once; keep it secret; the old one is refused "
        f"within {_key_cache_seconds()} s):"
    )
    print(key)
    return 0


async def _revoke_owner(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    _check_owner(args.owner)
    await store.revoke_owner_tokens(args.owner, datetime.now(UTC))
    print(
        f"revoked every owner token of {args.owner} signed until now: refused within "
        f"{_key_cache_seconds()} s by every API process, and its open feeds end (at once on "
        "PostgreSQL, else by their next heartbeat); sign a new one with owner-token"
    )
    return 0


def _key_cache_seconds() -> int:
    """How long an API process may still accept a key or token after it is revoked."""
    # Imported here, as OWNER_PATTERN below: tocsin.api loads the whole API (FastAPI, every
    # route), ~0.25 s of CPU that `keys list`, `create` and `vapid` do not need.
    from tocsin.api.security import KEY_TTL

    return int(KEY_TTL.total_seconds())


def _check_owner(owner: str) -> None:
    from tocsin.api.models import OWNER_PATTERN

    if not re.fullmatch(OWNER_PATTERN, owner):
        raise ValueError("an owner is 1-128 characters of letters, digits and . _ : @ -")


async def _owner_token(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    _check_owner(args.owner)
    ttl = parse_duration(args.ttl, field="ttl", minimum=TTL_MIN, maximum=TTL_MAX)
    expires = datetime.now(UTC) + timedelta(seconds=ttl)
    secret = await owner_token_secret(store, settings.secret)
    print(sign_owner_token(args.owner, expires=expires, secret=secret))
    return 0


def _vapid(args: argparse.Namespace) -> int:
    """No database: the pair lives in the settings (private) and in the web page (public)."""
    private, public = new_vapid_keys()
    print("VAPID private key (set TOCSIN_VAPID_PRIVATE_KEY to it; keep it secret):")
    print(private)
    print("Application server key (public: the page's pushManager.subscribe applicationServerKey):")
    print(public)
    return 0


def _secret_key(args: argparse.Namespace) -> int:
    print(new_key())
    return 0


async def _rotate_secrets(store: AppStore, settings: Settings, args: argparse.Namespace) -> int:
    total = 0
    for _ in range(ROTATION_PASSES):
        done = await store.reseal_secrets()
        total += done.resealed
        if not done.raced:
            print(f"re-sealed {total} secrets: every stored secret is sealed with the first key")
            return 0
    print(
        f"tocsin keys: re-sealed {total} secrets, but {done.raced} kept changing: some process "
        "still seals with another key first; give every process the same TOCSIN_SECRET_KEY "
        "and run this again",
        file=sys.stderr,
    )
    return 1

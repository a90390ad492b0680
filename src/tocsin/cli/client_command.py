"""How each CLI client command is declared and run: the options they share (`--url`,
`--key`, `--json`), help with examples, and one place that turns a failure into its message
on stderr and its exit status."""

from __future__ import annotations

import argparse
import base64
import binascii
import os
from collections.abc import Callable
from typing import Any

from tocsin.auth import OWNER_CREDENTIAL_PREFIX
from tocsin.cli.client_format import print_problem
from tocsin.cli.client_http import INTERRUPTED, Api, ClientError, Target, usage_error

Command = Callable[[Api, argparse.Namespace], int]

EXIT_CODES = """\
exit status: 0 done; 1 the server refused (4xx: fix the request); 2 usage error;
3 the server cannot be reached or failed (5xx: try again); 4 partly done (an import with
refused lines). Settings: TOCSIN_URL (default http://127.0.0.1:8000), TOCSIN_KEY (an API
key or an owner token), TOCSIN_OWNER, TOCSIN_ZONE, TOCSIN_CHANNEL; see docs/cli.md."""


def shared_options() -> argparse.ArgumentParser:
    """The options every client command takes, after its name (`tocsin list --json`)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("server")
    group.add_argument(
        "--url", help="the Tocsin server (default TOCSIN_URL, else http://127.0.0.1:8000)"
    )
    group.add_argument("--key", help="an API key or owner token (default TOCSIN_KEY)")
    group.add_argument(
        "--json", action="store_true", help="print JSON for scripts (errors: JSON on stderr)"
    )
    return common


def add_command(
    subparsers: Any,
    name: str,
    command: Command,
    *,
    summary: str,
    examples: str,
    title: str | None = None,
) -> argparse.ArgumentParser:
    """A client command `name` that runs `command`, with `examples` in its `--help`.
    `title` is how errors name it (`contacts add`), `name` by default."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=summary[:1].upper() + summary[1:] + ".",
        epilog=f"examples:\n{examples.rstrip()}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[shared_options()],
    )
    parser.set_defaults(handler=_runner(title or name, command))
    return parser


def _runner(title: str, command: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            with Api(Target.from_flags(args.url, args.key)) as api:
                return command(api, args)
        except ClientError as error:
            print_problem(title, error, as_json=args.json)
            return error.exit_status
        except KeyboardInterrupt:
            return INTERRUPTED

    return run


def owner_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--owner",
        help=f"whose {what} (default TOCSIN_OWNER, else the owner token's owner)",
    )


def owner_of(args: argparse.Namespace, api: Api) -> str | None:
    """The owner named by `--owner`, else `TOCSIN_OWNER`, else the one an owner token is
    for (read, not verified: the server verifies), else None (the server decides)."""
    return args.owner or os.environ.get("TOCSIN_OWNER") or _token_owner(api.target.key)


def required_owner(args: argparse.Namespace, api: Api) -> str:
    owner = owner_of(args, api)
    if owner is None:
        raise usage_error("give --owner (or set TOCSIN_OWNER, or use an owner token)")
    return owner


def _token_owner(key: str | None) -> str | None:
    if not key or not key.startswith(OWNER_CREDENTIAL_PREFIX):
        return None
    encoded = key[len(OWNER_CREDENTIAL_PREFIX) :].split(".", 1)[0]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None

"""`tocsin config`: the effective settings with secrets masked, or the reference table of
every setting (`--markdown`) that docs/operations.md carries between two markers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tocsin.masking import MASK, masked
from tocsin.settings import Settings, env_name, is_secret, load_settings

BEGIN = "<!-- settings: begin (written by `tocsin config --markdown FILE`; do not edit) -->"
END = "<!-- settings: end -->"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="print the effective settings (secrets masked), or the reference of them all",
        description="Check the TOCSIN_* settings and print each one's effective value, "
        "secrets masked (exit 2 naming the first wrong one). With --markdown, print the "
        "table of every setting, its default and meaning; with --markdown FILE, rewrite that "
        f"table in FILE between the lines {BEGIN!r} and {END!r}.",
    )
    parser.add_argument(
        "--markdown",
        nargs="?",
        const="-",
        metavar="FILE",
        help="the reference table instead of the values (to FILE's marked section if given)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.markdown is None:
        for name, value in effective(load_settings()).items():
            print(f"{name}={value}")
        return 0
    if args.markdown == "-":
        print(reference_table(), end="")
        return 0
    try:
        write_section(Path(args.markdown), reference_table())
    except (OSError, ValueError) as error:
        print(f"tocsin config: {error}", file=sys.stderr)
        return 1
    return 0


def effective(settings: Settings) -> dict[str, str]:
    """Each setting's environment variable and its value as text, secrets masked: a
    secret's whole value, and the credentials in any other (a URL's password, user part and
    query, a keyword database URL's password: `tocsin.masking`)."""
    shown: dict[str, str] = {}
    for field in Settings.model_fields:
        value = getattr(settings, field)
        if value is None:
            text = ""
        elif is_secret(field):
            text = MASK
        else:
            text = masked(_text(value))
        shown[env_name(field)] = text
    return shown


def reference_table() -> str:
    """The Markdown table of every setting: its variable, default and meaning."""
    lines = ["| Setting | Default | Meaning |", "|---|---|---|"]
    for field, info in Settings.model_fields.items():
        default = "unset" if info.default is None else f"`{_text(info.default)}`"
        meaning = " ".join((info.description or "").split()).replace("|", "\\|")
        lines.append(f"| `{env_name(field)}` | {default} | {meaning} |")
    return "\n".join(lines) + "\n"


def write_section(path: Path, table: str) -> None:
    """Replace what lies between `BEGIN` and `END` in `path` with `table`."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no section between {BEGIN!r} and {END!r}")
    path.write_text(text[: start + len(BEGIN)] + "\n" + table + text[end:], encoding="utf-8")


def section_of(text: str) -> str:
    """What lies between the markers of a file `write_section` wrote (for the staleness test)."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SecretStr):
        return MASK
    return str(value)

"""Which commands the `tocsin` command line has: its own, and those other installed
distributions add by entry point (the repository's bench: `bench`, `chaos`); without the
bench, those two say where they come from. And what each imports: only its own module, so
that `tocsin --help` or `tocsin config` does not load the server (FastAPI, uvicorn)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tocsin import cli
from tocsin.cli import NO_BENCH, added_commands, build_parser, listing, main

# Runs `main(argv)` in a fresh interpreter and prints every module then imported.
LOADED = """
import contextlib, io, sys
from tocsin.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(" ".join(sorted(sys.modules)))
"""
SERVER = frozenset({"fastapi", "starlette", "uvicorn", "tocsin.api", "tocsin.cli.serve"})


def _no_added_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a server install: no distribution adds a command."""
    monkeypatch.setattr(cli, "added_commands", dict)


def _loaded(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(done.stdout.split())


def test_the_bench_adds_bench_and_chaos() -> None:
    assert added_commands() == {
        "bench": "tocsin_bench.cli_bench",
        "chaos": "tocsin_bench.cli_chaos",
    }
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["chaos", "--help"])
    assert done.value.code == 0


@pytest.mark.parametrize("argv", [["bench", "burst", "--reminders", "10"], ["chaos"]])
def test_without_the_bench_its_commands_say_where_they_come_from(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_added_commands(monkeypatch)
    assert main(argv) == 2
    assert capsys.readouterr().err == NO_BENCH.format(command=argv[0]) + "\n"


def test_without_the_bench_the_help_has_only_tocsins_own_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_added_commands(monkeypatch)
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "serve" in shown
    assert "bench" not in shown
    assert "chaos" not in shown


def test_a_client_command_loads_neither_the_server_nor_the_bench() -> None:
    loaded = _loaded("list", "--help")
    assert "tocsin.cli.client" in loaded
    assert not loaded & {"tocsin_bench", "fastapi", "uvicorn", "asyncpg"}


def test_the_help_lists_the_commands_as_their_modules_register_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tocsin --help` lists them from `COMMANDS`, without importing their modules: the
    same names, order and lines as the parser their modules make."""
    _no_added_commands(monkeypatch)
    assert listing({}).format_help() == build_parser().format_help()


def test_the_help_imports_no_command() -> None:
    assert {name for name in _loaded("--help") if name.startswith("tocsin.")} == {"tocsin.cli"}


def test_a_command_imports_its_own_module_alone() -> None:
    loaded = _loaded("config")
    assert {name for name in loaded if name.startswith("tocsin.cli")} == {
        "tocsin.cli",
        "tocsin.cli.config",
    }
    assert not loaded & SERVER


@pytest.mark.parametrize(
    "argv",
    [[name, "--help"] for name in ("worker", "migrate", "rezone", "keys", "config")]
    + [["keys", "vapid"], ["config", "--markdown"]],
    ids=" ".join,
)
def test_only_serve_and_api_import_the_server(argv: list[str]) -> None:
    assert not _loaded(*argv) & SERVER

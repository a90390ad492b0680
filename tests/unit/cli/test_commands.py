"""Which commands the `tocsin` command line has: its own, and those other installed
distributions add by entry point (the repository's bench: `bench`, `chaos`); without the
bench, those two say where they come from."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from tocsin import cli
from tocsin.cli import NO_BENCH, added_commands, build_parser, main


def _no_added_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a server install: no distribution adds a command."""

    def none(*, group: str) -> list[EntryPoint]:
        assert group == cli.ADDED_COMMANDS
        return []

    monkeypatch.setattr(cli, "entry_points", none)


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


def test_without_the_bench_the_parser_has_only_tocsins_own_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_added_commands(monkeypatch)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    shown = capsys.readouterr().out
    assert "serve" in shown
    assert "bench" not in shown
    assert "chaos" not in shown


def test_a_client_command_loads_neither_the_server_nor_the_bench() -> None:
    script = (
        "import sys\n"
        "from tocsin.cli import main\n"
        "try:\n"
        "    main(['list', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    loaded = set(done.stdout.split())
    assert "tocsin" in loaded
    assert not loaded & {"tocsin_bench", "fastapi", "uvicorn", "asyncpg"}

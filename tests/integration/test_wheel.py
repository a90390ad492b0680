"""The wheel built from pyproject.toml is the production package: it holds none of the bench
(benchmarks, local peers, `tocsin chaos`, which stops the PostgreSQL server it runs against)
and declares no command that the bench brings."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The commands that stop, kill or switch over a PostgreSQL server, which `tocsin chaos` runs.
STOPS_A_DATABASE = ("pg_ctlcluster", "pg_autoctl", "pg_ctl ")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        capture_output=True,
        timeout=300,
        check=True,
    )
    (built,) = out.glob("tocsin-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_holds_tocsin_and_no_bench(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "tocsin/cli/__init__.py" in names
    assert "tocsin/store/base.py" in names
    packages = {name.split("/")[0] for name in names if not name.startswith("tocsin-")}
    assert packages == {"tocsin"}
    bench = [
        name
        for name in names
        if name.startswith("tocsin/bench/")
        or name in {"tocsin/cli/bench.py", "tocsin/cli/chaos.py"}
    ]
    assert not bench


def test_no_module_of_the_wheel_stops_a_database(wheel: zipfile.ZipFile) -> None:
    stopping = [
        name
        for name in wheel.namelist()
        if any(command.encode() in wheel.read(name) for command in STOPS_A_DATABASE)
    ]
    assert not stopping


def test_the_wheel_declares_the_tocsin_command_alone(wheel: zipfile.ZipFile) -> None:
    (declared,) = [
        name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")
    ]
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(declared).decode())
    assert entry_points.sections() == ["console_scripts"]
    assert dict(entry_points["console_scripts"]) == {"tocsin": "tocsin.cli:main"}

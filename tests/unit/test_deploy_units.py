"""The systemd units in deploy/systemd/ load (`systemd-analyze verify`) and start the
commands this version has."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tocsin.cli import build_parser

UNITS = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
INSTALLED = "/opt/tocsin/bin/tocsin"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_units_verify(tmp_path: Path) -> None:
    tocsin = Path(sys.executable).with_name("tocsin")
    units = []
    for unit in sorted(UNITS.glob("*.service")):
        copy = tmp_path / unit.name
        copy.write_text(unit.read_text().replace(INSTALLED, str(tocsin)))
        units.append(str(copy))

    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *units],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")


def test_each_unit_runs_a_command_this_version_has() -> None:
    parser = build_parser()
    for unit in UNITS.glob("*.service"):
        starts = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]
        assert len(starts) == 1, unit.name
        argv = starts[0].removeprefix(f"ExecStart={INSTALLED} ").replace("%H-%i", "host-1").split()
        parser.parse_args(argv)  # exits (fails the test) on an unknown command or flag

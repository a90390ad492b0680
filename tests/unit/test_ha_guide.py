"""The HA guide is the script the failover test runs: docs/operations.md shows
deploy/pg_auto_failover/setup.sh's steps as they are, and its tuning table the settings
`tocsin_bench.ha` gives the script."""

from __future__ import annotations

import re
from pathlib import Path

from tocsin_bench import ha

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operations.md"


def _shown() -> str:
    text = GUIDE.read_text()
    found = re.search(
        r"<!-- setup.sh: begin[^\n]*-->\n```bash\n(.*?)```\n<!-- setup.sh: end -->", text, re.S
    )
    assert found, "the guide shows no setup.sh block"
    return found.group(1)


def test_the_guide_shows_the_scripts_steps_as_they_are() -> None:
    script = ha.SETUP.read_text()
    steps = script[script.index("monitor() {") : script.index('case "$step" in')].rstrip() + "\n"
    assert _shown() == steps, "docs/operations.md: copy the steps of setup.sh into its block again"


def test_the_guides_tuning_table_has_what_the_test_sets() -> None:
    rows = {}
    for line in GUIDE.read_text().splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) == 6 and cells[1].strip("`").startswith(("pgautofailover.", "node `")):
            rows[cells[1].removeprefix("node ").strip("`")] = cells[3]
    for name, value in ha.MONITOR_SETTINGS.items():
        assert rows.get(name) in (f"{value} ms", value), (name, rows.get(name))
    for name, value in ha.NODE_SETTINGS.items():
        assert rows.get(name) == f"{value} s", (name, rows.get(name))


def test_the_scripts_config_set_words_cannot_be_read_as_options() -> None:
    """A password is a word pg_autoctl's option parser reads as options when it starts with
    `-` (token_urlsafe's do one time in 64: "set: invalid option -- '_'" and a failed node);
    `--` ends the options before the name and the value."""
    script = ha.SETUP.read_text()
    calls = [line.strip() for line in script.splitlines() if "pg_autoctl config set" in line]
    calls = [call for call in calls if not call.startswith("#")]
    assert calls, "setup.sh sets nothing with `pg_autoctl config set`?"
    for call in calls:
        assert re.search(r'pg_autoctl config set --pgdata "\$PGDATA" -- ', call), call

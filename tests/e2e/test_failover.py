"""Failover under load, as a user runs it: `tocsin chaos --failover` as a subprocess, on a
pg_auto_failover cluster it starts on this machine (a monitor, a primary and its synchronous
standby). Webhook rings at 200 a second and creates through the API while the primary's
server is killed, the standby promoted and the old primary rejoins; then a planned
switchover. Nothing acknowledged is lost, no identity is accepted twice but as a retry of
one firing, nothing arrives after its deadline, and the API answers 503 problems with
Retry-After, never another 5xx.

No bound here is tight on time: the machine may be busy. The measured numbers are in
docs/reliability.md; these bounds only say that rings came back. The run takes about 3
minutes (the 150 s window, ~10 s for the cluster, the settle); past RUN_SECONDS it is
stopped. Whatever happens, nothing it started outlives the test: the run is asked to stop
(SIGTERM: it stops its processes and its cluster), then everything still running with its
temporary folder in its environment is killed and the folder removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.loud import unavailable
from tests.support.processes import clean_env, kill_strays
from tocsin_bench import ha

# Run alone, after the rest: its two servers, monitor, workers and 200 rings a second for
# minutes take the machine. Shared with the parallel suite on 2 cores, one run ended with 2,050
# saves the API had answered missing on the new primary, and as many rings claimed again
# (writes of the old primary that never reached it); alone, the same run loses nothing.
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.heavy]

# 150 s: the kill at 37.5 s, the old primary back as the standby ~20 s later, the switchover
# at 97.5 s and settled ~15 s after, rings due through each. The switchover waits for the
# rejoin, which once took 100 s in a clean-clone CI run (18 s measured): with a 120 s window
# the switchover then came after the last ring was due, and nothing rang through it. A rejoin
# of up to 110 s still leaves it rings due during it.
RATE, SECONDS = 200, 150
COMMAND = [
    *("chaos", "--failover", "--duration", f"{SECONDS}s", "--rate", str(RATE)),
    *("--workers", "2", "--freshness", "2m", "--json"),
]
RUN_SECONDS = 255  # the 150 s window took ~210 s with other suites running beside it
STOP_SECONDS = 30  # for it to stop what it started once asked (~20 s measured)


@pytest.fixture
def run_folder(tmp_path: Path) -> Iterator[Path]:
    """The run's TMPDIR: the cluster's data and the run's logs go under it. Readable by the
    `postgres` user the cluster runs as when the tests run as root (tmp_path is not)."""
    folder = Path(tempfile.mkdtemp(prefix="tocsin-failover-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        kill_strays(folder)
        for logs in folder.glob("tocsin-failover-*"):  # the run's own logs, for a failure
            shutil.copytree(logs, tmp_path / logs.name, dirs_exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)


def _run(folder: Path) -> tuple[int | None, dict[str, Any], str]:
    env = clean_env() | {"TMPDIR": str(folder)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tocsin", *COMMAND],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its group: the API, workers and receiver it starts
    )
    try:
        out, errors = process.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        try:
            out, errors = process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, errors = process.communicate()
        errors += f"\n(stopped: it ran past {RUN_SECONDS} s)"
    finally:
        if process.poll() is None:  # an error of ours, or KeyboardInterrupt
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    report: dict[str, Any] = json.loads(out) if out.strip() else {}  # one run: one object
    return process.returncode, report, errors[-5000:]


@pytest.mark.timeout(RUN_SECONDS + STOP_SECONDS + 15)
def test_rings_go_on_through_a_failover_and_a_switchover(run_folder: Path, tmp_path: Path) -> None:
    missing = ha.missing()
    if missing is not None:
        unavailable("pg_auto_failover", missing)
    status, report, errors = _run(run_folder)
    assert report, errors
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))  # its numbers, kept
    assert report["violations"] == {}, report["violations"]
    assert status == 0, errors
    metrics = report["metrics"]
    counts = metrics["counts"]
    assert metrics["settled"] is True
    # The load was there: most batches were taken in time (a batch that met the failover
    # for longer than its lead is not created, and is not a violation: no 201 promised it).
    assert counts["created"] >= RATE * SECONDS * 0.8, counts
    assert counts["answers"].get("503", 0) + counts["answers"].get("0", 0) > 0, (
        "some creates met the switch",
        counts["answers"],
    )
    faults = metrics["faults"]
    unplanned, planned = faults["unplanned failover"], faults["planned switchover"]
    assert unplanned["killed"] != unplanned["promoted"]
    assert planned["to"] == unplanned["killed"], "the old primary came back and took over"
    # Rings came back on the new primary, once the monitor had started the failover
    # (targets: 30 s and 5 s, met with room on this machine; these bounds say that rings
    # came back, not how fast).
    assert unplanned["detected_after_s"] < unplanned["first_ring_after_s"] < 90, unplanned
    assert planned["rings_stopped_s"] < 60, planned
    lateness = metrics["lateness"]
    assert lateness["unplanned failover"]["rang"] > 0
    assert lateness["planned switchover"]["rang"] > 0

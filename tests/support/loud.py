"""Skips that must not go unnoticed: PostgreSQL or a browser missing on a developer's machine.

A fixture that cannot get what its tests need calls `unavailable`, which skips the test and
remembers why; the end of the run repeats each reason in red. Under CI (`CI=true`) nothing
may be missing, so the same call fails the test instead. With pytest-xdist the reasons are
gathered in the worker processes and sent to the controller, which prints them.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import pytest

_reasons: dict[str, None] = {}  # "WHAT TESTS WERE SKIPPED: why", in order, once each


def unavailable(what: str, reason: str) -> NoReturn:
    """Skip (outside CI) or fail (under CI) the current test: `what` is missing for `reason`."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI: {reason}")
    _reasons[f"{what.upper()} TESTS WERE SKIPPED: {reason}"] = None
    pytest.skip(f"{what} tests skipped: {reason}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    output: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: hand the reasons to the controller
        output["unavailable"] = list(_reasons)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown when it is not loaded
def pytest_testnodedown(node: Any, error: object) -> None:
    for reason in getattr(node, "workeroutput", {}).get("unavailable", []):
        _reasons[reason] = None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in _reasons:
        terminalreporter.write_sep("!", reason, red=True)

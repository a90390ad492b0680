"""A real headless browser for the tests: Debian's `chromium`, driven by Playwright.

Registered as a pytest plugin (`tests/conftest.py`), so any test module can take the
`browser` fixture. Playwright's own browser download is never used: it launches the
system's `/usr/bin/chromium` (`.ci/run` installs it when missing). Without it the tests
that need it are skipped, loudly, except under CI (`CI=true`), where they fail instead.

The fixture is per module: Playwright's synchronous API runs its own event loop, which
must not be alive while other modules' asyncio tests run theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.support.loud import unavailable

CHROMIUM = Path("/usr/bin/chromium")
# A ring's sound plays without a click first (Playwright itself adds --no-sandbox: CI is root).
_ARGUMENTS = ["--autoplay-policy=no-user-gesture-required"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module (skipped, loudly, when missing outside CI)."""
    if not CHROMIUM.exists():
        unavailable("browser", f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=_ARGUMENTS)
        try:
            yield launched
        finally:
            launched.close()

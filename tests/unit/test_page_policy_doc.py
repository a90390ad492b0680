"""docs/page.md quotes the Content-Security-Policy the page is served with, word for word."""

from __future__ import annotations

import re
from pathlib import Path

from tocsin.web import CONTENT_SECURITY_POLICY

PAGE_DOC = Path(__file__).parents[2] / "docs" / "page.md"


def test_the_documented_policy_is_the_one_sent() -> None:
    quoted = re.search(r"`Content-Security-Policy: ([^`]+)`", PAGE_DOC.read_text())
    assert quoted is not None
    assert " ".join(quoted[1].split()) == CONTENT_SECURITY_POLICY

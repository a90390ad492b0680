"""The order files are handed out in when the tests run in parallel: the long ones first.

Under `--dist loadfile` each xdist worker takes a file at a time from one queue. By default
xdist puts the files with the most tests first, which leaves the scenarios of a minute or
more (one or two tests a file) to the end, run by one or two workers while the others have
finished (on 4 workers the second until-done file started at 794 s of 1,078). Files holding a
test marked `long` are queued first (the Makefile turns xdist's own reordering off), so the
short ones fill in around them: 6 workers then ended within 11 s of each other.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the files' own order
        return
    long = {item.path for item in items if item.get_closest_marker("long") is not None}
    items.sort(key=lambda item: item.path not in long)  # stable: each file's order kept

"""Which time zone data this process works rings out with: the tzdata release, and a digest
of each zone's rules in it, so that a database can tell which zones an upgrade changed."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import import_module, resources

from tocsin.time.zones import zone_names


def tzdata_version() -> str:
    """The IANA release of the tzdata package in use (`2026a`)."""
    version: str = import_module("tzdata").IANA_VERSION  # the package has no type hints
    return version


@cache
def zone_digests() -> dict[str, str]:
    """Zone name → a digest of its compiled rules (the TZif file `load_zone` reads), for every
    zone `load_zone` accepts. Two releases give a zone the same digest when its file is
    unchanged; a changed file may or may not move a given ring (`tocsin rezone` checks each)."""
    files = resources.files("tzdata.zoneinfo")
    return {
        name: hashlib.blake2b(
            files.joinpath(*name.split("/")).read_bytes(), digest_size=8
        ).hexdigest()
        for name in sorted(zone_names())
    }

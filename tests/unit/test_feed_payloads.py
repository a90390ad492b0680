"""The in-app feed's NOTIFY payloads: rings packed under NOTIFY's limit, and read back."""

from __future__ import annotations

import pytest

from tocsin.store.codec import FEED_PAYLOAD_BYTES, feed_payloads, parse_feed_payload


def test_payloads_pack_rings_under_the_notify_limit_and_read_back() -> None:
    longest = "a" * 128  # an owner as long as the API takes
    rings = [(f"owner-{n}@example.com", f"r{n:019d}.1772442000") for n in range(1000)]
    rings.append((longest, "06eah81yg0j8v47qz939.1772442000"))

    payloads = feed_payloads(rings)

    assert len(payloads) < 20
    assert all(len(p.encode()) <= FEED_PAYLOAD_BYTES for p in payloads)
    assert [ring for payload in payloads for ring in parse_feed_payload(payload)[0]] == rings


@pytest.mark.parametrize("line", ["", "no-space", " r1.1", "ana "])
def test_a_malformed_line_is_set_apart(line: str) -> None:
    rings, bad = parse_feed_payload(f"ana r1.1\n{line}\nbob r2.2")
    assert rings == [("ana", "r1.1"), ("bob", "r2.2")]
    assert bad == [line]

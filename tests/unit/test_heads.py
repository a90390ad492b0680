"""The head meter: where a head ends, and which limit it is over, whatever reads it arrives
in; what follows a head is never measured as its."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.heads import HeadLimits, HeadMeter, HeadTooLarge

SMALL = HeadLimits(line_bytes=40, head_bytes=120, fields=4)

lines = st.lists(
    st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")).map(lambda b: b + b"\r\n"),
    max_size=8,
)


def heads(limits: HeadLimits = SMALL) -> st.SearchStrategy[bytes]:
    """Heads near the limits: a request line, some header lines, the blank line, often a
    body after it."""
    return st.builds(
        lambda start, fields, after: b"GET /" + start + b" HTTP/1.1\r\n" + b"".join(fields)
        + b"\r\n" + after,
        st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),
        lines,
        st.binary(max_size=60),
    )  # fmt: skip


def outcome(meter: HeadMeter, reads: list[bytes]) -> tuple[str, int]:
    """('end', where the head ends in all the bytes) or ('refused', the status)."""
    offset = 0
    try:
        for data in reads:
            end = meter.feed(data)
            if end >= 0:
                return ("end", offset + end)
            offset += len(data)
    except HeadTooLarge as error:
        return ("refused", error.status)
    return ("open", offset)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in pairwise(edges) if b > a]


@given(heads(), st.lists(st.integers(min_value=0, max_value=300), max_size=10))
def test_any_split_into_reads_gives_what_one_read_gives(head: bytes, cuts: list[int]) -> None:
    whole = outcome(HeadMeter(SMALL), [head])
    assert outcome(HeadMeter(SMALL), split(head, cuts)) == whole


@given(heads())
def test_a_head_within_the_limits_ends_at_its_blank_line(head: bytes) -> None:
    end = head.index(b"\r\n\r\n") + 4
    lines = head[:end].split(b"\n")[:-1]
    within = (
        end <= SMALL.head_bytes
        and all(len(line) + 1 <= SMALL.line_bytes for line in lines)
        and len(lines) - 2 <= SMALL.fields
    )
    if within:
        assert outcome(HeadMeter(SMALL), [head]) == ("end", end)
    else:
        assert outcome(HeadMeter(SMALL), [head])[0] == "refused"


def test_each_limit_and_its_status() -> None:
    limits = HeadLimits()
    request_line = b"GET /" + b"a" * 8200 + b" HTTP/1.1\r\n"
    assert outcome(HeadMeter(limits), [request_line]) == ("refused", 414)
    long_line = b"GET / HTTP/1.1\r\nX: " + b"a" * 8200
    assert outcome(HeadMeter(limits), [long_line]) == ("refused", 431)
    many = b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n"
    assert outcome(HeadMeter(limits), [many]) == ("refused", 431)
    hundred = b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 100 + b"\r\n"
    assert outcome(HeadMeter(limits), [hundred]) == ("end", len(hundred))
    large = b"GET / HTTP/1.1\r\n" + (b"X: " + b"a" * 8000 + b"\r\n") * 5
    assert outcome(HeadMeter(limits), [large]) == ("refused", 431)


def test_a_line_too_long_is_refused_before_it_ends() -> None:
    meter = HeadMeter(HeadLimits())
    assert meter.feed(b"GET / HTTP/1.1\r\nX-Big: ") == -1
    assert meter.feed(b"a" * 4096) == -1
    with pytest.raises(HeadTooLarge):
        meter.feed(b"a" * 4096)  # the line is 8,199 bytes now, with no end in sight


@pytest.mark.parametrize(
    "head", [b"GET / HTTP/1.1\nHost: x\n\n", b"GET / HTTP/1.1\r\nHost: x\n\r\n"]
)
def test_a_bare_line_feed_ends_a_head_too(head: bytes) -> None:
    assert outcome(HeadMeter(SMALL), [head + b"body"]) == ("end", len(head))
    assert outcome(HeadMeter(SMALL), [bytes([b]) for b in head]) == ("end", len(head))


def test_a_reset_meter_measures_the_next_head_afresh() -> None:
    meter = HeadMeter(SMALL)
    first = b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * 30 + b"\r\n"
    assert meter.feed(first + b"\r\n") == len(first) + 2
    meter.reset()
    assert meter.feed(first + b"\r\n") == len(first) + 2

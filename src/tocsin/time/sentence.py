"""A reminder as people type it in one box — "call mom at 18:00", "tomorrow 9am dentist",
"remind me in an hour to stretch", "every weekday at 8:30 standup" — split into its words and
its time.

The time is a run of words at the end of the sentence, at its start, or a day at the start
and a time at the end ("tomorrow call mom at 6pm"), that `read_when` understands whole (a
part of the day alone at the start is a word of the text: "Evening walk at 7pm"); the rest
is what the reminder says. The longest run wins (`on Friday` over `Friday`), the end on a
tie, as English puts the time last. Runs are at most `LONGEST_WHEN` words, so the work is
bounded whatever the length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from tocsin.errors import InvalidInput
from tocsin.time.oneoff import EXAMPLES
from tocsin.time.phrases import PARTS_OF_DAY, Token, UnreadPhrase, looks_like_rrule, tokenize
from tocsin.time.schedule import read_when

LONGEST_WHEN = 12  # words: "every 2 weeks on Tue and Thu at 7:15" is 10
_LEAD = re.compile(r"\s*(?:remind\s+me\s+(?:to\s+|about\s+|that\s+)?|remember\s+to\s+)", re.I)
# Between a time said first and the words: "in an hour to stretch", "Friday: dentist".
_AFTER_TIME = re.compile(r"\A(?:\s*(?:to|about|that)\b|\s*[:,;\-–—])+", re.I)
# Between the words and a time said last: "pay rent by Friday", "call mom, 18:00".
_BEFORE_TIME = re.compile(r"(?:\b(?:by|on|at)\s*|[:,;\-–—]\s*)+\Z", re.I)
_EXAMPLES = (
    "e.g. 'call mom at 18:00', 'tomorrow 9am dentist' or 'every Monday at 9 water the plants'"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sentence:
    """What a sentence says: the reminder's `text`, the part read as its time (`when`), and
    the `at` or `repeat` that stands for (as `read_when` gives them)."""

    text: str
    when: str
    at: str | None
    repeat: str | None


@dataclass(frozen=True, slots=True)
class _Run:
    when: str
    text: str
    words: int


def read_sentence(sentence: str, *, zone: str, now: datetime, field: str = "say") -> Sentence:
    """The words and the time of a one-box sentence, the time resolved against `now` in
    `zone`. Raises InvalidInput(field): no time found in it (saying so), no words beside
    the time, or a time found that names no future moment (`today 08:00` at noon)."""
    body = _LEAD.sub("", sentence, count=1)
    lowered = body.lower()
    if len(lowered) != len(body):  # a letter whose lower case is longer: read it lowered
        body = lowered
    tokens = tokenize(lowered)
    if tokens and _read(_Run(body.strip(), "-", len(tokens)), zone=zone, now=now) is not None:
        raise InvalidInput(field, f"{body.strip()!r} is only a time: say what to remind you of too")
    found: list[tuple[_Run, Sentence]] = []
    wrong: InvalidInput | None = None
    for last in (True, False):
        try:
            run = _longest(body, tokens, last=last, zone=zone, now=now)
        except InvalidInput as error:
            wrong = wrong or error
            continue
        if run is not None:
            found.append(run)
    if len(found) == 2 and found[0][1].at is not None and found[1][1].at is not None:
        both = _both(body, found[1][0], found[0][0], zone=zone, now=now)
        if both is not None:
            return both
    if found:
        return max(found, key=lambda f: f[0].words)[1]
    if wrong is not None:
        raise InvalidInput(field, wrong.message)
    raise InvalidInput(field, _no_time(sentence, tokens))


def _longest(
    body: str, tokens: list[Token], *, last: bool, zone: str, now: datetime
) -> tuple[_Run, Sentence] | None:
    """The longest run at the end (`last`) or the start of `body` read as a time, with the
    words beside it. A run understood but naming no time (`today 08:00` at noon) raises:
    a shorter one (`08:00`) is not what was meant."""
    most = min(LONGEST_WHEN, len(tokens) - 1)
    for words in range(most, 0, -1):
        start = tokens[-words].start if last else 0
        end = len(body) if last else tokens[words - 1].start + len(tokens[words - 1].text)
        rest = body[:start] if last else body[end:]
        run = _Run(body[start:end].strip(), _words(rest, last), words)
        if not last and words == 1 and run.when.lower() in PARTS_OF_DAY:
            continue  # "Morning pills at 7", "Evening walk": a word of the text
        read = _read(run, zone=zone, now=now)
        if read is not None:
            return run, read
    return None


def _read(run: _Run, *, zone: str, now: datetime) -> Sentence | None:
    """The run read as a time (None: not understood, or no words left beside it); raises
    InvalidInput when it is understood but names no time."""
    if not run.text or looks_like_rrule(run.when):
        return None
    try:
        at, repeat = read_when(run.when, zone=zone, now=now)
    except UnreadPhrase:
        return None
    return Sentence(text=run.text, when=run.when, at=at, repeat=repeat)


def _both(body: str, first: _Run, last: _Run, *, zone: str, now: datetime) -> Sentence | None:
    """A day said first and a time said last ("tomorrow call mom at 6pm"), read as one."""
    head = body.lower().find(first.when.lower())
    tail = body.lower().rfind(last.when.lower())
    if head < 0 or tail < head + len(first.when):
        return None
    middle = _words(_words(body[head + len(first.when) : tail], True), False)
    run = _Run(f"{first.when} {last.when}", middle, first.words + last.words)
    try:
        return _read(run, zone=zone, now=now)
    except InvalidInput:
        return None


def _words(rest: str, before_time: bool) -> str:
    pattern = _BEFORE_TIME if before_time else _AFTER_TIME
    return pattern.sub("", rest.strip()).strip()


def _no_time(sentence: str, tokens: list[Token]) -> str:
    if not sentence.strip():
        return f"it is empty: say what to remind you of and when, {_EXAMPLES}"
    if len(tokens) < 2:
        return f"{sentence.strip()!r} needs both what to remind you of and when, {_EXAMPLES}"
    return (
        f"found no time at the start or the end of {sentence.strip()!r}; say when "
        f"({EXAMPLES}), {_EXAMPLES}"
    )

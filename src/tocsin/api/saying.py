"""`say`: a reminder's words and its time in one sentence, as a person types them in one
box ("call mom at 18:00"). It is spelled out into `text` and the `at` or `repeat` its time
stands for (`tocsin.time.sentence`), and then saved or previewed as any other; every error
of it names `say`, the one field the person wrote."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from tocsin.api.models import ReminderIn
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.errors import InvalidInput
from tocsin.time.sentence import Sentence, read_sentence

SAID_BY_SAY = frozenset({"text", "at", "repeat", "when"})
_SCHEDULE = frozenset({"at", "repeat", "when"})
T = TypeVar("T")


def sentence_of(say: str, *, zone: str, given: set[str], now: datetime) -> Sentence:
    """What `say` says, read in `zone` against `now`; 422 naming `say` when it gives no
    words and time, or comes with the fields it stands for (`given`: the body's)."""
    clash = sorted(given & SAID_BY_SAY)
    if clash:
        shown = ", ".join(f"`{name}`" for name in clash)
        raise invalid([FieldError("say", f"give `say` alone, not with {shown}")])
    try:
        return read_sentence(say, zone=zone, now=now)
    except InvalidInput as error:
        raise invalid([FieldError(error.field, error.message)]) from None


def spelled_out(item: ReminderIn, *, now: datetime) -> ReminderIn:
    """The reminder with `say` spelled out into `text` and `at` or `repeat`; as it is
    without `say`, once it has a `text` (422 naming `text` when it has neither)."""
    if item.say is None:
        if item.text is None:
            raise invalid([FieldError("text", "required (or give `say`)")])
        return item
    said = sentence_of(item.say, zone=item.zone, given=item.model_fields_set, now=now)
    update = {"text": said.text, "at": said.at, "repeat": said.repeat, "say": None}
    return item.model_copy(update=update)


def as_said(item: ReminderIn, now: datetime, make: Callable[[ReminderIn], T]) -> T:
    """`make` of the reminder spelled out, its time's errors (`at`, `repeat`) named `say`
    when `say` gave them."""
    spelled = spelled_out(item, now=now)
    if item.say is None:
        return make(spelled)
    try:
        return make(spelled)
    except Problem as problem:
        errors = [
            FieldError("say" if e.field in _SCHEDULE else e.field, e.message)
            for e in problem.errors
        ]
        raise Problem(problem.status, problem.slug, problem.detail, errors=errors) from None

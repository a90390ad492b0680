"""`say`: a reminder's words and time in one sentence, saved, previewed and refused through
the API on both backends, at the API's clock (a FakeClock: Wednesday 21 October 2026, 14:00
in Paris)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import create, fields

BASE: dict[str, Any] = {"owner": "ana", "zone": "Europe/Paris", "channel": "log"}


@pytest.mark.parametrize(
    ("say", "text", "at", "repeat"),
    [
        ("call mom at 18:00", "call mom", "2026-10-21T18:00:00", None),
        ("tomorrow 9am dentist", "dentist", "2026-10-22T09:00:00", None),
        ("remind me in an hour to stretch", "stretch", "2026-10-21T13:00:00Z", None),
        ("every weekday at 8:30 standup", "standup", None, "every weekday at 8:30"),
        ("tomorrow call mom at 6pm", "call mom", "2026-10-22T18:00:00", None),
    ],
)
async def test_one_box_gives_the_words_and_the_time(
    client: httpx.AsyncClient, say: str, text: str, at: str | None, repeat: str | None
) -> None:
    made = await create(client, BASE | {"say": say})

    assert (made["text"], made["at"], made["repeat"]) == (text, at, repeat)


async def test_the_preview_shows_both(client: httpx.AsyncClient) -> None:
    body = {"zone": "Europe/Paris", "say": "tomorrow 9am dentist", "count": 3}
    answer = await client.post("/v1/occurrences", json=body)

    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "text": "dentist",
        "when": "tomorrow 9am",
        "occurrences": [{"at": "2026-10-22T07:00:00Z", "local": "2026-10-22T09:00:00+02:00"}],
    }


@pytest.mark.parametrize(
    ("body", "field", "said"),
    [
        ({"say": "buy 2 apples"}, "say", "found no time"),
        ({"say": "2099-03-01 08:00"}, "say", "only a time"),
        ({"say": "call mom today 08:00"}, "say", "has passed"),
        ({"say": "call mom at 18:00", "text": "Call mom"}, "say", "give `say` alone"),
        ({"say": "call mom at 18:00", "when": "18:00"}, "say", "give `say` alone"),
        ({"when": "18:00"}, "text", "required"),
    ],
)
async def test_a_sentence_without_words_or_time_is_refused_naming_say(
    client: httpx.AsyncClient, body: dict[str, Any], field: str, said: str
) -> None:
    answer = await client.post("/v1/reminders", json=BASE | body)
    preview = await client.post("/v1/occurrences", json={"zone": "Europe/Paris", **body})

    assert answer.status_code == 422, answer.text
    assert fields(answer.json()) == [field]
    assert said in answer.json()["errors"][0]["message"]
    if field == "say" and "text" not in body:  # a preview has no `text` to give
        assert fields(preview.json()) == ["say"]


async def test_a_batch_item_may_say_it_too(client: httpx.AsyncClient) -> None:
    items = [BASE | {"say": "water the plants every Monday"}, BASE | {"say": "plants"}]
    answer = await client.post("/v1/reminders:batch", json={"items": items})

    saved, refused = answer.json()["items"]
    assert saved["status"] == "created"
    assert fields(refused["problem"]) == ["items.1.say"]

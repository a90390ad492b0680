"""The CLI client's HTTP side: one `Api` per command run, and the errors it raises, each
carrying the exit status a script will see."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from tocsin import __version__

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_SECONDS = 30.0
# A 429 or 503 says when to come back (Retry-After); a command waits that long at most this
# many times, and never longer than MAX_WAIT_SECONDS at once, then gives up and says why.
RETRIES = 3
MAX_WAIT_SECONDS = 10.0
PAGE_SIZE = 200  # the API's largest page: fewest round trips for --all and export

# Exit statuses (docs/cli.md, "Exit codes"): a script tells "fix the request" (1, 2) from
# "try again later" (3) and "some of it went in" (4).
OK = 0
REFUSED = 1
USAGE = 2
UNAVAILABLE = 3
PARTIAL = 4
INTERRUPTED = 130


class ClientError(Exception):
    """A reason this command failed, with its exit status and the problem to show."""

    def __init__(self, status: int, problem: Mapping[str, Any]) -> None:
        super().__init__(problem.get("detail") or problem.get("title") or "failed")
        self.exit_status = status
        self.problem = dict(problem)


def usage_error(detail: str) -> ClientError:
    """The command as given cannot run (a file that does not exist, a flag that is wrong)."""
    return ClientError(USAGE, {"title": "usage error", "detail": detail})


def unavailable(detail: str) -> ClientError:
    """Nothing was decided: the server could not be reached or did not answer as Tocsin
    does; try again (a 5xx problem from the server gets the same status, with its own text)."""
    return ClientError(UNAVAILABLE, {"title": "server unavailable", "detail": detail})


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """Where the client sends its requests, and as whom."""

    url: str
    key: str | None

    @classmethod
    def from_flags(cls, url: str | None, key: str | None) -> Target:
        """Flags win over `TOCSIN_URL` / `TOCSIN_KEY`; an empty key means none (loopback)."""
        chosen_url = url or os.environ.get("TOCSIN_URL") or DEFAULT_URL
        chosen_key = key if key is not None else os.environ.get("TOCSIN_KEY")
        return cls(url=chosen_url.rstrip("/"), key=chosen_key or None)


class Api:
    """A thin, synchronous httpx client that turns every non-2xx answer into a ClientError."""

    def __init__(self, target: Target, *, transport: httpx.BaseTransport | None = None) -> None:
        headers = {"User-Agent": f"tocsin-cli/{__version__}", "Accept": "application/json"}
        if target.key:
            headers["Authorization"] = f"Bearer {target.key}"
        self.target = target
        self._http = httpx.Client(
            base_url=target.url, headers=headers, timeout=TIMEOUT_SECONDS, transport=transport
        )

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def get(self, path: str, **params: Any) -> Answer:
        query = {k: v for k, v in params.items() if v is not None}
        return self.request("GET", path, params=query)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry: bool = False,
    ) -> Answer:
        """The answer to one request. A 429 or 503 to a read, or to a request marked
        `retry` (a write with an Idempotency-Key: safe to send again), is sent again after
        Retry-After; a `retry` request is also sent again after a lost connection, unless
        the very first attempt finds nothing listening (then the server is not there)."""
        attempts = RETRIES + 1 if retry or method == "GET" else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._http.request(
                    method, path, json=json, params=params, headers=headers
                )
            except httpx.TransportError as error:
                first_refusal = attempt == 1 and isinstance(error, httpx.ConnectError)
                if not retry or first_refusal or attempt == attempts:
                    raise unavailable(self._unreachable(error)) from None
                time.sleep(min(2 ** (attempt - 1), MAX_WAIT_SECONDS))
                continue
            if response.status_code in (429, 503) and attempt < attempts:
                time.sleep(_retry_after(response))
                continue
            return _checked(response)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def pages(self, path: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a keyset-paged list (`key`: `reminders`, `contacts`), page by page."""
        cursor: str | None = None
        while True:
            page = self.get(path, limit=PAGE_SIZE, cursor=cursor, **params).body
            yield from page[key]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def _unreachable(self, error: httpx.TransportError) -> str:
        reason = str(error) or type(error).__name__
        return f"cannot reach {self.target.url} ({reason}); is `tocsin serve` running there?"


def _retry_after(response: httpx.Response) -> float:
    try:
        wait = float(response.headers.get("Retry-After", "1"))
    except ValueError:
        wait = 1.0
    return max(0.0, min(wait, MAX_WAIT_SECONDS))


def _checked(response: httpx.Response) -> Answer:
    body = _body(response)
    if response.status_code < 400:
        if body is None and response.status_code != 204:
            raise unavailable(
                f"{response.url} answered {response.status_code} without JSON: "
                "is this a Tocsin server?"
            )
        return Answer(status=response.status_code, body=body, headers=response.headers)
    problem = body if isinstance(body, dict) else {"detail": response.text[:500]}
    problem.setdefault("title", response.reason_phrase)
    problem["status"] = response.status_code
    if response.status_code >= 500:
        raise ClientError(UNAVAILABLE, problem)
    raise ClientError(REFUSED, problem)


def _body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None

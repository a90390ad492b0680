"""A small progress bar on stderr for the long phases (silent when stderr is not a terminal,
except for one line when the phase ends)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

_WIDTH = 30
_EVERY = 0.2  # seconds between redraws


class Progress:
    """`with Progress("saving", total=n) as bar: bar.advance(k)` draws `saving [####   ] k/n`."""

    def __init__(self, label: str, *, total: int, unit: str = "", stream: TextIO | None = None):
        self.label = label
        self.total = max(total, 0)
        self.unit = unit
        self.done = 0
        self._stream = stream or sys.stderr
        self._live = self._stream.isatty()
        self._started = time.monotonic()
        self._drawn = 0.0

    def __enter__(self) -> Progress:
        self._draw(force=True)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._draw(force=True)
        if self._live:
            self._stream.write("\n")
        else:
            self._stream.write(self._line() + "\n")
        self._stream.flush()

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._draw()

    def update(self, done: int) -> None:
        self.done = done
        self._draw()

    def _line(self) -> str:
        elapsed = time.monotonic() - self._started
        fraction = min(1.0, self.done / self.total) if self.total else 1.0
        filled = int(fraction * _WIDTH)
        bar = "#" * filled + " " * (_WIDTH - filled)
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label} [{bar}] {self.done:,}/{self.total:,}{unit} {elapsed:5.1f}s"

    def _draw(self, *, force: bool = False) -> None:
        if not self._live:
            return
        now = time.monotonic()
        if not force and now - self._drawn < _EVERY:
            return
        self._drawn = now
        self._stream.write("\r" + self._line())
        self._stream.flush()


def note(message: str) -> None:
    """One line of what the benchmark is doing, on stderr."""
    print(message, file=sys.stderr, flush=True)

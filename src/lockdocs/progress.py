"""One line of progress on a terminal for a long `lockdocs build`: what it is doing, and how
many diagrams it has drawn.

Nothing shows for a build that ends within DELAY seconds (most builds) nor when stderr is not a
terminal (CI logs, pipes, the tests' captured output): the line would only be noise there.
LOCKDOCS_PROGRESS_AFTER sets the delay in seconds (0: at once). A background thread redraws
the line when it changes, at most ten times a second, and the line is erased at the end, so
what the build prints afterwards starts on a clean line.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType
from typing import TextIO

DELAY = 2.0
_TICK = 0.1


def _delay() -> float:
    raw = os.environ.get("LOCKDOCS_PROGRESS_AFTER", "")
    try:
        return max(0.0, float(raw)) if raw else DELAY
    except ValueError:
        return DELAY


def _terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """`with Progress(sys.stderr) as p: p.say("drawing 3/10 diagrams")`."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = _terminal(stream)
        self._text = ""
        self._shown = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._delay = _delay()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="lockdocs-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def say(self, text: str) -> None:
        """What the build does now (shown once the delay has passed)."""
        with self._lock:
            self._text = text

    def count(self, what: str, done: int, total: int) -> None:
        self.say(f"lockdocs: {what} {done:,}/{total:,}")

    def _run(self) -> None:
        while not self._stop.wait(_TICK):
            if time.monotonic() - self._start < self._delay:
                continue
            with self._lock:
                if self._text != self._shown:
                    self._write("\r\x1b[K" + self._text)
                    self._shown = self._text

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._shown:
                self._write("\r\x1b[K")
                self._shown = ""

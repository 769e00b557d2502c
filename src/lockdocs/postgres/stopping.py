"""Stopping on a signal with everything cleaned up.

Python ends the process at SIGTERM and SIGHUP without running a single `finally`, so a replay
stopped by `timeout`, a CI runner or a closed terminal would leave its throwaway cluster running
and its folder and scratch database behind. Within `stop_on_signals()` those signals raise
`Stopped` (a KeyboardInterrupt, as SIGINT raises), so every cleanup on the way out runs; a
cleanup wrapped in `shielded()` holds further signals back until it is done.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Stopped(KeyboardInterrupt):
    """A signal asked the run to stop (SIGTERM, SIGHUP; SIGINT raises KeyboardInterrupt
    itself). Raised on the main thread, so every `finally` below runs: the server is stopped,
    the scratch database dropped and the folder removed, as after any other error."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` while the block runs, instead of ending the process
    at once with the server running and its folder left behind. Only the main thread can
    catch signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, _raise_stopped) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while a cleanup runs, so a second Ctrl-C (or the
    SIGTERM a supervisor sends after the first) cannot cut it short; a signal that came in the
    meantime is delivered when the cleanup is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)

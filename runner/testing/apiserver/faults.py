"""Fault injection: make the embedded server misbehave on demand, as real clusters do.

``Faults`` holds counters the request handlers consume (``take_*``): the next N requests fail
with a status, the next N WATCHes answer 410 (as an HTTP status or as an ERROR event after the
200) or stall, the next N LISTs with a resourceVersion answer 410; plus immediate actions on the
store (close every watch, expire continue tokens) and a per-request ``latency`` in seconds.

Concurrency: every method is thread-safe (one lock around the counters).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store import Store


class Faults:
    """The fault switches of one server (see module docstring). ``latency``: seconds added to
    every request (0 = none)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._counts = {"watch": 0, "watch_event": 0, "list": 0, "stall": 0}
        self._fail: list[tuple[int, float | None]] = []   # one (status, retry_after) per request
        self.latency = 0.0
        self.stalled = threading.Event()                 # set when a watch starts stalling

    def close_watches(self) -> None:
        """End every open watch stream cleanly (as a server-side timeout or restart)."""
        self._store.close_watches()

    def expire_next_watch(self, n: int = 1) -> None:
        """The next ``n`` WATCH requests answer HTTP 410 Expired."""
        self._add("watch", n)

    def expire_next_watch_event(self, n: int = 1) -> None:
        """The next ``n`` WATCH requests answer 200, then one ERROR event 410, then end."""
        self._add("watch_event", n)

    def expire_next_list(self, n: int = 1) -> None:
        """The next ``n`` LIST requests carrying a resourceVersion (or continue) answer 410."""
        self._add("list", n)

    def stall_next_watch(self, n: int = 1) -> None:
        """The next ``n`` WATCH requests send headers, then nothing until closed."""
        self._add("stall", n)

    def fail_next(self, n: int, status: int = 429, retry_after: float | None = None) -> None:
        """The next ``n`` requests (any path) answer ``status`` (429 with ``Retry-After`` in
        seconds when ``retry_after`` is given; 5xx as InternalError/ServiceUnavailable)."""
        with self._lock:
            self._fail.extend([(status, retry_after)] * n)

    def expire_continue_tokens(self) -> None:
        """Every continue token issued so far answers 410 Expired."""
        self._store.expire_continue_tokens()

    def expire_history(self) -> None:
        """Forget the event history: a watch from any resourceVersion seen so far gets 410."""
        self._store.expire_history()

    def reset(self) -> None:
        """Clear every pending fault and the latency."""
        with self._lock:
            self._counts = dict.fromkeys(self._counts, 0)
            self._fail.clear()
            self.latency = 0.0

    def _add(self, name: str, n: int) -> None:
        with self._lock:
            self._counts[name] += n

    def take(self, name: str) -> bool:
        """Consume one pending fault ``name`` (watch, watch_event, list, stall); True if any."""
        with self._lock:
            if self._counts[name] > 0:
                self._counts[name] -= 1
                return True
            return False

    def take_failure(self) -> tuple[int, float | None] | None:
        """Consume one pending request failure: ``(status, retry_after)`` or None."""
        with self._lock:
            return self._fail.pop(0) if self._fail else None

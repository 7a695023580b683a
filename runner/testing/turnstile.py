"""The turnstile: ``kinrun test`` hands watch events to the informers one at a time, in the
order of their resourceVersions, so every run of a case sees the same order.

With one reflector thread per informer, two informers' events reach their handlers in the
order their HTTP streams happen to be read: a key mapped by one informer and queued by another
lands in a workqueue in either order, with either cause, and a reconcile may read a cache that
has not seen the write before it (a second ``create`` and its 409). The turnstile sits between
each reflector and its ``ListerWatcher`` (:meth:`Turnstile.client` wraps the client the plan is
bound to) and holds every watch event until the runner releases it:

* :meth:`Turnstile.deliver` releases the held events up to a resourceVersion (the server's
  current one), always the lowest (resourceVersion, stream) first, each only once the previous
  one was handled: its informer stored it, called its synchronous handlers and asked for the
  next event, and every buffered handler (``idle()``) has caught up;
* a stream has received everything up to ``R`` once it got an event or a BOOKMARK at ``R`` or
  later (the embedded server sends events in resourceVersion order and BOOKMARKs with its
  global resourceVersion, ``kinrun.testing.quiet.BOOKMARK_INTERVAL``), so the lowest held
  event is the lowest of all that are still on their way;
* LISTs are taken in stream order (the order the plan wired its informers): a stream's LIST
  returns once every earlier stream has stored its own LIST and its handlers are idle, so the
  initial keys are queued in one order. A relist later (410) is not ordered.

resourceVersions are compared as integers here: the embedded server's are (``kinrun.cache``
never compares them). Thread-safety: reflector threads call the wrapped lister-watchers, the
runner calls :meth:`deliver`; one condition guards every stream's state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from kinrun.cache.listwatch import ObjectList, WatchEvent
from kinrun.clock import REAL_CLOCK

POLL = 0.001
"""Real seconds between two looks at a condition nothing signals (handlers going idle)."""


class NotDelivered(Exception):
    """Events were still on their way at the deadline; the message names the streams."""


class _Stream:
    """One wrapped lister-watcher: ``index`` (wiring order), ``name``; ``seen``: the highest
    resourceVersion received (LIST, event or BOOKMARK); ``held``: the resourceVersion of the
    event waiting for release (None: none); ``released``: the one released and not yet
    handled (None: none); ``listed``: its first LIST has been stored (its watch was opened)."""

    def __init__(self, index: int, name: str) -> None:
        self.index, self.name = index, name
        self.seen = -1
        self.held: int | None = None
        self.released: int | None = None
        self.listed = False


class Turnstile:
    """Holds watch events until :meth:`deliver` (module docstring). ``idle()``: whether every
    informer's buffered handlers have caught up (set before the informers start)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._streams: list[_Stream] = []
        self.idle: Callable[[], bool] = lambda: True
        self.sealed = False  # lister-watchers made from now on are not gated (seal)

    def seal(self) -> None:
        """Gate no lister-watcher made from now on: call it once the informers are wired,
        so a reconcile's own LIST (``applySet`` pruning) goes straight to the server."""
        self.sealed = True

    def client(self, client: Any) -> Any:
        """``client`` with its ``lister_watcher`` wrapped by this turnstile."""
        return _GatedClient(client, self)

    def _stream(self, name: str) -> _Stream:
        with self._cond:
            stream = _Stream(len(self._streams), name)
            self._streams.append(stream)
            return stream

    # -- the reflector side --------------------------------------------------------------------

    def _take_list(self, stream: _Stream, lister: Callable[[], ObjectList],
                   deadline: float) -> ObjectList:
        self._wait(lambda: all(s.listed for s in self._streams[:stream.index]) and self.idle(),
                   deadline)
        result = lister()
        with self._cond:
            stream.seen = max(stream.seen, _rv(result.resource_version))
        return result

    def _watched(self, stream: _Stream) -> None:
        with self._cond:
            stream.listed = True
            self._cond.notify_all()

    def _hold(self, stream: _Stream, rv: int, closed: threading.Event) -> bool:
        """Wait until the event at ``rv`` is released (True) or its watch closed (False)."""
        with self._cond:
            stream.seen = max(stream.seen, rv)
            stream.held = rv
            self._cond.notify_all()
            while stream.released != rv and not closed.is_set():
                self._cond.wait(0.05)  # close() sets no condition: look again now and then
            stream.held = None
            return not closed.is_set()

    def _handled(self, stream: _Stream) -> None:
        with self._cond:
            stream.released = None
            self._cond.notify_all()

    def _bookmark(self, stream: _Stream, rv: int) -> None:
        with self._cond:
            stream.seen = max(stream.seen, rv)
            self._cond.notify_all()

    def _wait(self, condition: Callable[[], bool], deadline: float) -> bool:
        """Wait (polling every :data:`POLL` s: ``idle()`` signals nothing) until
        ``condition()`` holds under the lock (True) or ``deadline`` passes (False)."""
        with self._cond:
            while not condition():
                left = deadline - REAL_CLOCK.now()
                if left <= 0:
                    return False
                self._cond.wait(min(POLL, left))
            return True

    # -- the runner side -------------------------------------------------------------------------

    def deliver(self, upto: int, deadline: float) -> int:
        """Release every event up to resourceVersion ``upto``, lowest first, each after the
        previous was handled; returns how many. Raises NotDelivered at ``deadline``
        (``REAL_CLOCK``)."""
        count = 0
        while True:
            if not self._wait(lambda: self._ready(upto), deadline):
                with self._cond:
                    raise NotDelivered(self._lagging(upto))
            with self._cond:
                held = [s for s in self._streams if s.held is not None]
                if not held:
                    return count
                stream = min(held, key=lambda s: (s.held, s.index))
                stream.released = stream.held
                self._cond.notify_all()
            count += 1

    def _ready(self, upto: int) -> bool:
        """Nothing released is unhandled, every stream holds an event or has seen ``upto``,
        and the buffered handlers are idle (lock held)."""
        return all(s.released is None and (s.held is not None or s.seen >= upto)
                   for s in self._streams) and self.idle()

    def _lagging(self, upto: int) -> str:
        lagging = [f"{s.name} at {s.seen}" for s in self._streams
                   if s.released is not None or (s.held is None and s.seen < upto)]
        return (f"watches did not reach resourceVersion {upto}: {', '.join(lagging)}"
                if lagging else "event handlers still busy")


class _GatedClient:
    """A client whose ``lister_watcher`` is gated; everything else is the wrapped client's."""

    def __init__(self, client: Any, turnstile: Turnstile) -> None:
        self._client, self._turnstile = client, turnstile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def lister_watcher(self, ref: Any, **kwargs: Any) -> Any:
        """The client's ListerWatcher, gated until the turnstile is sealed."""
        if self._turnstile.sealed:
            return self._client.lister_watcher(ref, **kwargs)
        name = ref.resource + (f" in {kwargs['namespace']}" if kwargs.get("namespace") else "")
        return _GatedListerWatcher(self._client.lister_watcher(ref, **kwargs),
                                   self._turnstile, self._turnstile._stream(name))


class _GatedListerWatcher:
    """A ListerWatcher (``kinrun.cache.listwatch``) whose LISTs and watch events go through
    the turnstile."""

    LIST_WAIT = 30.0
    """Real seconds a LIST waits for the earlier streams' before it goes ahead anyway."""

    def __init__(self, inner: Any, turnstile: Turnstile, stream: _Stream) -> None:
        self._inner, self._turnstile, self._stream = inner, turnstile, stream

    def list(self, **kwargs: Any) -> ObjectList:
        """The inner LIST, in stream order."""
        return self._turnstile._take_list(self._stream, lambda: self._inner.list(**kwargs),
                                          REAL_CLOCK.now() + self.LIST_WAIT)

    def watch(self, **kwargs: Any) -> _GatedWatch:
        """The inner watch, its events held until released."""
        self._turnstile._watched(self._stream)
        return _GatedWatch(self._inner.watch(**kwargs), self._turnstile, self._stream)


class _GatedWatch:
    """A Watch whose ADDED/MODIFIED/DELETED events wait for the turnstile; BOOKMARKs and
    ERRORs pass at once. ``close()`` also ends a wait."""

    def __init__(self, inner: Any, turnstile: Turnstile, stream: _Stream) -> None:
        self._inner, self._turnstile, self._stream = inner, turnstile, stream
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self._inner:
            rv = _rv((event.object.get("metadata") or {}).get("resourceVersion")
                     if isinstance(event.object, dict) else None)
            if event.type == "BOOKMARK":
                self._turnstile._bookmark(self._stream, rv)
            if event.type in ("BOOKMARK", "ERROR") or rv < 0:
                yield event
                continue
            if not self._turnstile._hold(self._stream, rv, self._closed):
                return
            yield event  # the informer stores it and calls its handlers before asking again
            self._turnstile._handled(self._stream)

    def close(self) -> None:
        """Close the inner watch and end a held event's wait (thread-safe, idempotent)."""
        self._closed.set()
        self._inner.close()


def _rv(text: Any) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1

"""MemoryListerWatcher: an in-memory API server for one collection, for tests and benchmarks.

It implements the ``ListerWatcher`` protocol over a dict of objects with a global integer
resourceVersion (sent as a string), a bounded event history (watching from before it answers
410), bookmarks on demand, and faults: close every watch cleanly, 410 on the next LIST or WATCH,
an ERROR-event 410 inside the next watch stream, a stalled watch, other errors on LIST/WATCH.
Test helpers (``wait_for``, request logs) let tests synchronise on events instead of sleeping.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from kinrun.cache.listwatch import Obj, ObjectList, WatchEvent
from kinrun.cache.store import meta_namespace_key
from kinrun.errors import ConflictError, ExpiredError, NotFoundError


class MemoryWatch:
    """One open watch stream. Thread-safety: ``close`` from any thread; iterate from one.

    A server-side close (``MemoryListerWatcher.close_watches``) delivers what was already sent,
    then ends; a client ``close()`` ends iteration at once."""

    def __init__(self, server: MemoryListerWatcher, *, stalled: bool = False,
                 request: dict[str, Any] | None = None) -> None:
        self._server = server
        self._cond = threading.Condition(threading.Lock())
        self._buffer: deque[WatchEvent | BaseException] = deque()
        self._closed = False  # closed by the client: end now
        self._ended = False  # ended by the server: end after the buffer
        self.stalled = stalled  # receives nothing until closed
        self.request = request or {}

    def push(self, item: WatchEvent | BaseException) -> None:
        """Server side: send an event (or an error to raise) unless stalled or ended."""
        with self._cond:
            if self.stalled or self._ended or self._closed:
                return
            self._buffer.append(item)
            self._cond.notify()

    def end(self) -> None:
        """Server side: finish the stream cleanly after what was already sent."""
        with self._cond:
            self._ended = True
            self._cond.notify()

    def close(self) -> None:
        """Client side: stop now (idempotent, any thread)."""
        with self._cond:
            self._closed = True
            self._buffer.clear()
            self._cond.notify()
        self._server._forget_watch(self)

    @property
    def closed(self) -> bool:
        """Whether the stream has ended or been closed."""
        return self._closed or self._ended

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self._cond:
                while not self._buffer and not self._closed and not self._ended:
                    self._cond.wait()
                if self._closed or not self._buffer:
                    break
                batch, self._buffer = self._buffer, deque()
            for item in batch:
                if self._closed:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        self._server._forget_watch(self)


class MemoryListerWatcher:
    """An in-memory collection of one ``kind`` (``api_version``) with watch semantics.

    resourceVersions are consecutive integers sent as strings; every create/update/delete gets a
    new one. ``history_size`` events are kept; a watch (or LIST) from a resourceVersion whose
    later events are no longer all kept answers 410 (ExpiredError). Objects handed out are the
    stored dicts: treat them as read-only. Thread-safety: every method is thread-safe.
    """

    def __init__(self, kind: str = "Pod", api_version: str = "v1", *, history_size: int = 1000) -> None:
        self.kind, self.api_version = kind, api_version
        self._cond = threading.Condition(threading.RLock())  # re-entrant: wait_for predicates may call methods
        self._rv = 1
        self._objects: dict[str, Obj] = {}
        self._history: deque[tuple[int, WatchEvent]] = deque()
        self._history_size = history_size
        self._compacted = 0  # events with rv <= this may be missing from history
        self._watches: list[MemoryWatch] = []
        self._faults: dict[str, int] = {}
        self._errors: dict[str, list[BaseException]] = {"list": [], "watch": []}
        self.list_requests: list[str] = []
        self.watch_requests: list[dict[str, Any]] = []
        self._uid = 0

    # -- server-side writes ---------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object; returns the stored copy (with resourceVersion, uid). ConflictError
        if the key exists."""
        with self._cond:
            key = meta_namespace_key(obj)
            if key in self._objects:
                raise ConflictError(f"{key} already exists")
            self._uid += 1
            stored = self._stamp_locked(obj, uid=f"uid-{self._uid}")
            self._objects[key] = stored
            self._emit_locked("ADDED", stored)
            return stored

    def update(self, obj: Obj) -> Obj:
        """Replace an existing object; returns the stored copy. NotFoundError if absent."""
        with self._cond:
            key = meta_namespace_key(obj)
            old = self._objects.get(key)
            if old is None:
                raise NotFoundError(f"{key} not found")
            stored = self._stamp_locked(obj, uid=old["metadata"].get("uid"))
            self._objects[key] = stored
            self._emit_locked("MODIFIED", stored)
            return stored

    def upsert(self, obj: Obj) -> Obj:
        """Create or update."""
        with self._cond:
            exists = meta_namespace_key(obj) in self._objects
        return self.update(obj) if exists else self.create(obj)

    def delete(self, key: str) -> Obj:
        """Remove ``key`` ("ns/name" or "name"); returns the final state. NotFoundError if absent."""
        with self._cond:
            old = self._objects.pop(key, None)
            if old is None:
                raise NotFoundError(f"{key} not found")
            final = self._stamp_locked(old, uid=old["metadata"].get("uid"))
            self._emit_locked("DELETED", final)
            return final

    def get(self, key: str) -> Obj | None:
        """The stored object under ``key``, or None."""
        with self._cond:
            return self._objects.get(key)

    def objects(self) -> dict[str, Obj]:
        """A snapshot: key -> stored object."""
        with self._cond:
            return dict(self._objects)

    @property
    def resource_version(self) -> str:
        """The current (latest) resourceVersion."""
        with self._cond:
            return str(self._rv)

    def _stamp_locked(self, obj: Obj, *, uid: str | None) -> Obj:
        self._rv += 1
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = str(self._rv)
        if uid:
            meta["uid"] = uid
        return {**obj, "apiVersion": obj.get("apiVersion", self.api_version),
                "kind": obj.get("kind", self.kind), "metadata": meta}

    def _emit_locked(self, kind: str, obj: Obj) -> None:
        event = WatchEvent(kind, obj)  # type: ignore[arg-type]
        self._history.append((self._rv, event))
        while len(self._history) > self._history_size:
            self._compacted = self._history.popleft()[0]
        for watch in self._watches:
            watch.push(event)

    # -- faults -------------------------------------------------------------------------------

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion to every open watch that allows it."""
        with self._cond:
            event = WatchEvent("BOOKMARK", {"kind": self.kind, "apiVersion": self.api_version,
                                            "metadata": {"resourceVersion": str(self._rv)}})
            for watch in self._watches:
                if watch.request.get("allow_bookmarks"):
                    watch.push(event)

    def close_watches(self) -> None:
        """End every open watch cleanly (as a server timeout does)."""
        with self._cond:
            watches, self._watches = self._watches, []
            self._cond.notify_all()
        for watch in watches:
            watch.end()

    def compact(self) -> None:
        """Forget all history: watching or listing from any older resourceVersion answers 410."""
        with self._cond:
            self._history.clear()
            self._compacted = self._rv

    def expire_next_list(self, n: int = 1) -> None:
        """The next ``n`` LISTs with a resourceVersion other than "" and "0" answer 410."""
        self._add_fault("list_410", n)

    def expire_next_watch(self, n: int = 1) -> None:
        """The next ``n`` WATCH requests raise ExpiredError (HTTP 410)."""
        self._add_fault("watch_410", n)

    def expire_next_watch_event(self, n: int = 1) -> None:
        """The next ``n`` watches send an ERROR event (410 Expired) first, then end."""
        self._add_fault("watch_error_event", n)

    def stall_next_watch(self, n: int = 1) -> None:
        """The next ``n`` watches send nothing at all until closed."""
        self._add_fault("watch_stall", n)

    def fail_next_list(self, error: BaseException, n: int = 1) -> None:
        """The next ``n`` LISTs raise ``error``."""
        with self._cond:
            self._errors["list"].extend([error] * n)

    def fail_next_watch(self, error: BaseException, n: int = 1) -> None:
        """The next ``n`` WATCH requests raise ``error``."""
        with self._cond:
            self._errors["watch"].extend([error] * n)

    def _add_fault(self, name: str, n: int) -> None:
        with self._cond:
            self._faults[name] = self._faults.get(name, 0) + n

    def _take_fault_locked(self, name: str) -> bool:
        if self._faults.get(name, 0) > 0:
            self._faults[name] -= 1
            return True
        return False

    # -- ListerWatcher --------------------------------------------------------------------------

    def list(self, *, resource_version: str = "") -> ObjectList:
        """See ListerWatcher.list. "" and "0" list the current state; another resourceVersion
        answers 410 when it is older than the kept history (or a fault says so)."""
        with self._cond:
            self.list_requests.append(resource_version)
            self._cond.notify_all()
            if self._errors["list"]:
                raise self._errors["list"].pop(0)
            if resource_version not in ("", "0"):
                if self._take_fault_locked("list_410") or int(resource_version) < self._compacted:
                    raise ExpiredError(f"too old resource version: {resource_version}", reason="Expired")
            return ObjectList(list(self._objects.values()), str(self._rv), kind=f"{self.kind}List")

    def watch(self, *, resource_version: str, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True) -> MemoryWatch:
        """See ListerWatcher.watch. From "" or "0": ADDED for every current object first."""
        request = {"resource_version": resource_version, "timeout_seconds": timeout_seconds,
                   "allow_bookmarks": allow_bookmarks}
        with self._cond:
            self.watch_requests.append(request)
            self._cond.notify_all()
            if self._errors["watch"]:
                raise self._errors["watch"].pop(0)
            if self._take_fault_locked("watch_410"):
                raise ExpiredError("watch: too old resource version", reason="Expired")
            return self._open_watch_locked(resource_version, request)

    def _open_watch_locked(self, resource_version: str, request: dict[str, Any]) -> MemoryWatch:
        watch = MemoryWatch(self, stalled=self._take_fault_locked("watch_stall"), request=request)
        if self._take_fault_locked("watch_error_event"):
            watch.push(WatchEvent("ERROR", _status_410()))
            watch.end()
            return watch
        if resource_version in ("", "0"):
            backlog = [WatchEvent("ADDED", o) for o in self._objects.values()]
        else:
            since = int(resource_version)
            if since < self._compacted:
                raise ExpiredError(f"too old resource version: {resource_version}", reason="Expired")
            backlog = [event for rv, event in self._history if rv > since]
        for event in backlog:
            watch.push(event)
        self._watches.append(watch)
        return watch

    def _forget_watch(self, watch: MemoryWatch) -> None:
        with self._cond:
            if watch in self._watches:
                self._watches.remove(watch)
            self._cond.notify_all()

    # -- test helpers ---------------------------------------------------------------------------

    def open_watches(self) -> list[MemoryWatch]:
        """The watches currently open."""
        with self._cond:
            return list(self._watches)

    def wait_for(self, predicate: Callable[[MemoryListerWatcher], bool], timeout: float = 5.0) -> bool:
        """Block (real time, at most ``timeout`` s) until ``predicate(self)`` holds; it is
        re-checked whenever a LIST/WATCH arrives or a watch ends. Returns whether it held."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)


def _status_410() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
            "reason": "Expired", "message": "too old resource version"}


__all__ = ["MemoryListerWatcher", "MemoryWatch"]

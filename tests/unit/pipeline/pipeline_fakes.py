"""Fakes for the pipeline tests: a fake clock, recorders that tests wait on (never
sleep), a scripted ListerWatcher for opaque resourceVersions, and pod builders."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from kinrun.cache import DeletedFinalStateUnknown, ObjectList, WatchEvent

WAIT = 5.0  # seconds: the bound on every wait; tests never sleep


def pod(name: str, ns: str | None = "default", rv: str = "", **extra: Any) -> dict[str, Any]:
    """A minimal Pod dict."""
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    if rv:
        meta["resourceVersion"] = rv
    meta.update(extra.pop("meta", {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, **extra}


class Recorder:
    """A ResourceEventHandler that records ("add"|"update"|"delete", ...) and can be waited on."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self._cond = threading.Condition()

    def _record(self, item: tuple[Any, ...]) -> None:
        with self._cond:
            self.events.append(item)
            self._cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(("add", obj["metadata"]["name"], is_in_initial_list, obj))

    def on_update(self, old: Any, new: Any) -> None:
        self._record(("update", new["metadata"]["name"], old, new))

    def on_delete(self, obj: Any) -> None:
        name = obj.key.split("/")[-1] if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
        self._record(("delete", name, obj))

    def wait_for(self, predicate: Callable[[list[tuple[Any, ...]]], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.events), timeout)

    def wait_count(self, n: int) -> bool:
        return self.wait_for(lambda ev: len(ev) >= n)

    def kinds(self) -> list[tuple[str, str]]:
        return [(e[0], e[1]) for e in self.events]


class ScriptedWatch:
    """A Watch that yields scripted events (or raises scripted errors), then blocks until
    closed unless ``end`` is true."""

    def __init__(self, items: list[Any], end: bool = True) -> None:
        self.items, self.end = items, end
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        for item in self.items:
            if self.closed.is_set():
                return
            if isinstance(item, BaseException):
                raise item
            yield item
        if not self.end:
            self.closed.wait(WAIT)

    def close(self) -> None:
        self.closed.set()


class ScriptedListerWatcher:
    """A ListerWatcher whose answers are scripted in order; records every request. When the
    script runs out, ``watch`` blocks until closed (a quiet stream)."""

    def __init__(self) -> None:
        self.lists: deque[Any] = deque()
        self.watches: deque[Any] = deque()
        self.list_requests: list[str] = []
        self.watch_requests: list[dict[str, Any]] = []
        self._cond = threading.Condition()

    def list(self, *, resource_version: str = "") -> ObjectList:
        with self._cond:
            self.list_requests.append(resource_version)
            self._cond.notify_all()
            item = self.lists.popleft() if self.lists else ObjectList([], "rv-empty")
        if isinstance(item, BaseException):
            raise item
        return item

    def watch(self, *, resource_version: str, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True) -> Any:
        with self._cond:
            self.watch_requests.append({"resource_version": resource_version,
                                        "timeout_seconds": timeout_seconds,
                                        "allow_bookmarks": allow_bookmarks})
            self._cond.notify_all()
            item = self.watches.popleft() if self.watches else ScriptedWatch([], end=False)
        if isinstance(item, BaseException):
            raise item
        return item

    def wait_for(self, predicate: Callable[[ScriptedListerWatcher], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)



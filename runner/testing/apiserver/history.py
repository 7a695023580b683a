"""The bounded event history of one resource: what a watch resumes from.

Every write to a resource appends one ``Event`` (the new stored entry, the previous one, and the
watch line ``{"type":...,"object":...}\\n`` serialised once and shared by every watcher).
Like the watch cache of kube-apiserver (``storage/cacher/watch_cache.go``), the log keeps at
least ``capacity`` events; a watch or an exact LIST from a resourceVersion older than what is
retained answers 410 Expired. ``floor_rv`` is that boundary: every event with
``rv > floor_rv`` is retained.

Events are addressed by a sequence number (``seq``, 0-based over the log's life); the events
held are ``seq`` in ``[base_seq, next_seq)``. A watcher keeps the ``seq`` of the next event it
must deliver; when it falls below ``base_seq`` it lagged too far and is expired.

Concurrency: an ``EventLog`` is guarded by the store's lock (``cond`` is built on it); every
method expects that lock held (``_locked``) except ``Event``'s, which are idempotent.
"""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from .store import Entry


_PREFIX = {t: b'{"type":"' + t.encode() + b'","object":'
           for t in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")}
_SUFFIX = b"}\n"


def event_pieces(event_type: str, raw: bytes) -> tuple[bytes, bytes, bytes]:
    """The newline-terminated JSON watch event for an object serialised as ``raw``, as three
    buffers (prefix, object, suffix) so it can be written without copying the object."""
    return (_PREFIX[event_type], raw, _SUFFIX)


def event_line(event_type: str, raw: bytes) -> bytes:
    """The watch event for ``raw`` as one bytes line."""
    return b"".join(event_pieces(event_type, raw))


class Event:
    """One write: ``type`` (ADDED/MODIFIED/DELETED), ``rv`` (the write's resourceVersion),
    ``entry`` (the object after the write; for DELETED its last state stamped with ``rv``),
    ``old`` (the entry before, None for ADDED). The object bytes are shared by every watcher
    (``pieces``). Immutable after construction except the lazily built ``_deleted_raw``."""

    __slots__ = ("type", "rv", "entry", "old", "_deleted_raw")

    def __init__(self, event_type: str, rv: int, entry: Entry, old: Entry | None) -> None:
        self.type = event_type
        self.rv = rv
        self.entry = entry
        self.old = old
        self._deleted_raw: bytes | None = None

    def pieces(self, as_type: str | None = None) -> tuple[bytes, bytes, bytes]:
        """This event's watch line as buffers, optionally under another type (ADDED for an
        object that starts matching a selector)."""
        return event_pieces(as_type or self.type, self.entry.raw)

    def deleted_pieces(self) -> tuple[bytes, bytes, bytes]:
        """A DELETED line carrying the *previous* object stamped with this event's rv: what a
        watcher whose selector stops matching receives (as the cacher's convertToWatchEvent)."""
        if self._deleted_raw is None:
            assert self.old is not None
            obj = orjson.loads(self.old.raw)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._deleted_raw = orjson.dumps(obj)
        return event_pieces("DELETED", self._deleted_raw)


class EventLog:
    """The retained events of one resource, oldest first.

    Invariants: ``events[i]`` has seq ``base_seq + i``; rvs strictly increase; every event with
    ``rv > floor_rv`` is held; ``len(events) <= capacity + slack`` (trimmed in batches).
    """

    def __init__(self, lock: threading.RLock, capacity: int) -> None:
        self.cond = threading.Condition(lock)
        self.capacity = max(1, capacity)
        self._slack = max(1, self.capacity // 4)
        self.events: list[Event] = []
        self.base_seq = 0
        self.floor_rv = 0

    @property
    def next_seq(self) -> int:
        """The seq the next appended event will get."""
        return self.base_seq + len(self.events)

    def append_locked(self, event: Event) -> None:
        """Add ``event`` (its rv above every held one), trim the oldest beyond capacity, and
        wake the watchers."""
        self.events.append(event)
        if len(self.events) > self.capacity + self._slack:
            self.trim_locked(len(self.events) - self.capacity)
        self.cond.notify_all()

    def trim_locked(self, count: int) -> None:
        """Forget the ``count`` oldest events (raises floor_rv accordingly)."""
        count = min(count, len(self.events))
        if count <= 0:
            return
        self.floor_rv = self.events[count - 1].rv
        del self.events[:count]
        self.base_seq += count

    def clear_locked(self, current_rv: int) -> None:
        """Forget every event: watches and exact lists from before ``current_rv`` expire."""
        self.trim_locked(len(self.events))
        self.floor_rv = max(self.floor_rv, current_rv)

    def seq_after_locked(self, rv: int) -> int:
        """The seq of the first held event with rv > ``rv`` (``next_seq`` when none)."""
        index = bisect.bisect_right(self.events, rv, key=lambda e: e.rv)
        return self.base_seq + index

    def since_locked(self, seq: int) -> list[Event]:
        """The held events from ``seq`` on (``seq >= base_seq``)."""
        return self.events[seq - self.base_seq:]

    def after_rv_locked(self, rv: int) -> list[Event]:
        """The held events with rv > ``rv``."""
        return self.since_locked(self.seq_after_locked(rv))

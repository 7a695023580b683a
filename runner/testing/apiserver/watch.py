"""WATCH: one open watch stream reading a resource's event history.

A ``Watcher`` starts either at a resourceVersion (resuming after it from the ``EventLog``; 410
Expired when it is older than the retained history) or, for resourceVersion "" / "0" (and
``sendInitialEvents``), with synthetic ADDED events for the current objects, as kube-apiserver's
cacher does. It then follows the log: it never holds per-watcher copies, only a cursor, so a
slow reader never slows writers; a reader that falls behind the log's capacity is expired with
an ERROR event (``{"type":"ERROR","object":<Status 410 Expired>}``). A resourceVersion newer
than the store's is accepted (no 504: 1.20's watch cache does not wait for it, only LIST/GET
do) and nothing up to it is sent.

Filtering follows the cacher's ``convertToWatchEvent``: an update whose object starts matching
the selectors is sent as ADDED, one that stops matching as DELETED (carrying the previous
object with the new resourceVersion). With ``allowWatchBookmarks`` a BOOKMARK (an object of the
kind with only ``metadata.resourceVersion``) is sent every ``bookmark_interval`` seconds once the
watcher has caught up. A metadata-only watch (``metadata_only``, asked for with
``as=PartialObjectMetadata`` in the Accept header) converts every event's object, bookmarks
included, to PartialObjectMetadata (``partial``).

Concurrency: a Watcher is used by one thread (its HTTP connection); ``stop()`` may be called
from any thread. It reads shared state under the store's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from . import partial
from .history import Event, EventLog, event_line, event_pieces
from .registry import ResourceType
from kinrun.selectors import FieldSelector, LabelSelector
from .status import StatusError, too_old

if TYPE_CHECKING:
    from .store import Entry, Store

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def error_line(error: StatusError) -> bytes:
    """The ERROR watch event carrying ``error`` as a metav1.Status."""
    return event_line("ERROR", error.to_json())


class Watcher:
    """One watch (see module docstring). Build with ``Watcher.open``; call ``next_lines``
    until it reports the end."""

    def __init__(self, store: Store, rtype: ResourceType, log: EventLog, *, version: str,
                 namespace: str | None, labels: LabelSelector, fields: FieldSelector,
                 cursor: int, initial: list[Entry], bookmarks: bool, bookmark_interval: float,
                 initial_end_bookmark: bool, after_rv: int = 0,
                 metadata_only: bool = False) -> None:
        self._store = store
        self._rtype = rtype
        self._log = log
        self._version = version
        self._convert = version != rtype.storage_version
        self._metadata_only = metadata_only
        self._namespace = namespace
        self._labels = labels
        self._fields = fields
        self._filtered = bool(namespace) or not labels.empty or not fields.empty
        self._cursor = cursor                       # seq of the next event to deliver
        self._after_rv = after_rv                   # events with rv <= this are never sent
        self._last_rv = store.resource_version      # rv the client has seen up to (approx.)
        self._pending = [p for e in initial for p in event_pieces("ADDED", e.raw)]
        self._initial_end = initial_end_bookmark
        self._snapshot_rv = store.resource_version   # rv of the initial events' state (lock held)
        self._bookmarks = bookmarks
        self._interval = max(0.001, bookmark_interval)
        self._next_bookmark = time.monotonic() + self._interval
        self._epoch = store.watch_epoch
        self._stopped = False
        self.table: Callable[[dict], dict] | None = None
        # set right after open (before streaming): each event's object becomes a one-row
        # Table (``tables``; the watch of ``kubectl get -w``); BOOKMARK and ERROR stay as are

    @classmethod
    def open(cls, store: Store, rtype: ResourceType, *, version: str, resource_version: str,
             namespace: str | None, labels: LabelSelector, fields: FieldSelector,
             bookmarks: bool, bookmark_interval: float, send_initial_events: bool = False,
             metadata_only: bool = False) -> Watcher:
        """Start a watch at ``resource_version`` ("" or "0": current objects first as ADDED;
        ``send_initial_events`` does the same for any rv and ends them with a bookmark;
        ``metadata_only``: PartialObjectMetadata objects, see the module docstring).
        Raises 410 Expired (HTTP form) when the rv predates the history, 400 when malformed."""
        from .store import parse_rv  # noqa: PLC0415  (store imports watch users, not watch)
        with store.lock:
            log = store.log_locked(rtype)
            initial: list[Entry] = []
            after_rv = 0
            if resource_version in ("", "0") or send_initial_events:
                objects = store.entries_locked(rtype)
                initial = [objects[k] for k in sorted(objects)
                           if objects[k].matches(namespace, labels, fields)]
                cursor = log.next_seq
            else:
                requested = parse_rv(resource_version)
                if requested < log.floor_rv:
                    raise too_old(requested, log.floor_rv + 1)
                cursor = log.seq_after_locked(requested)
                # a resourceVersion newer than the store's is accepted, and events up to it are
                # skipped, as 1.20's cacher (GetAllEventsSinceThreadUnsafe, cacheWatcher.process)
                after_rv = requested if requested > store.resource_version else 0
            watcher = cls(store, rtype, log, version=version, namespace=namespace, labels=labels,
                          fields=fields, cursor=cursor, initial=initial, bookmarks=bookmarks,
                          bookmark_interval=bookmark_interval,
                          initial_end_bookmark=send_initial_events and bookmarks,
                          after_rv=after_rv, metadata_only=metadata_only)
            store.watcher_changed_locked(rtype, +1)
            return watcher

    def stop(self) -> None:
        """End this watch at its next wake-up (thread-safe, idempotent)."""
        with self._store.lock:
            if not self._stopped:
                self._stopped = True
                self._store.watcher_changed_locked(self._rtype, -1)
            self._log.cond.notify_all()

    def _ended_locked(self) -> bool:
        store = self._store
        return self._stopped or store.closed or store.watch_epoch != self._epoch

    def _unserved_locked(self) -> bool:
        """The resource stopped being served (its CRD is gone) and its log was dropped."""
        return self._store.log_for_key_locked(self._rtype.key) is not self._log

    def next_lines(self, max_wait: float) -> tuple[list[bytes], bool]:
        """The next watch events, waiting at most ``max_wait`` seconds for some; returns
        ``(buffers, ended)``: ``buffers`` concatenated are newline-terminated JSON events (it
        may be empty: nothing happened); once ``ended`` is True the stream must be closed (it
        may still carry a final ERROR event). It runs over 40 lines: the order of its checks
        (pending lines, the initial-events bookmark, faults, the deadline) is the watch
        protocol's, easier to follow in one place."""
        if self._pending or self._initial_end:
            lines = self._convert_lines(self._pending)
            self._pending = []
            if self._initial_end:
                self._initial_end = False
                lines.append(self._bookmark_line(self._snapshot_rv, True))
            return lines, False
        deadline = time.monotonic() + max_wait
        with self._store.lock:
            while True:
                if self._ended_locked():
                    return [], True
                log = self._log
                if self._cursor < log.base_seq:
                    error = too_old(self._last_rv, log.floor_rv + 1)
                    return [error_line(error)], True
                if self._cursor < log.next_seq:
                    events = log.since_locked(self._cursor)
                    self._cursor = log.next_seq
                    self._last_rv = events[-1].rv
                    if self._after_rv:
                        events = [e for e in events if e.rv > self._after_rv]
                        if self._last_rv >= self._after_rv:
                            self._after_rv = 0
                        if not events:
                            continue
                    break
                if self._unserved_locked():
                    return [], True
                now = time.monotonic()
                if self._bookmarks and now >= self._next_bookmark:
                    self._next_bookmark = now + self._interval
                    return [self._bookmark_line(self._store.resource_version, False)], False
                if now >= deadline:
                    return [], False
                until = min(deadline, self._next_bookmark) if self._bookmarks else deadline
                log.cond.wait(max(0.0, until - now))
        return self._convert_lines(self._select(events)), False

    def _select(self, events: list[Event]) -> list[bytes]:
        out: list[bytes] = []
        if not self._filtered:
            for ev in events:
                out.extend(ev.pieces())
            return out
        ns, labels, fields = self._namespace, self._labels, self._fields
        for ev in events:
            now_ok = ev.type != "DELETED" and ev.entry.matches(ns, labels, fields)
            old_ok = ev.old is not None and ev.old.matches(ns, labels, fields)
            if now_ok and (old_ok or ev.type == "ADDED"):
                out.extend(ev.pieces())
            elif now_ok:
                out.extend(ev.pieces("ADDED"))
            elif old_ok:
                out.extend(ev.pieces() if ev.type == "DELETED" else ev.deleted_pieces())
        return out

    def _convert_lines(self, pieces: list[bytes]) -> list[bytes]:
        if self.table is not None:
            return [self._table_line(line) for line in b"".join(pieces).splitlines()]
        if self._metadata_only:
            return [partial.event_line(line) for line in b"".join(pieces).splitlines()]
        if not self._convert:
            return pieces
        api_version = self._rtype.api_version(self._version)
        out = []
        for line in b"".join(pieces).splitlines():
            event = orjson.loads(line)
            if isinstance(event.get("object"), dict) and event.get("type") != "ERROR":
                event["object"]["apiVersion"] = api_version
            out.append(orjson.dumps(event) + b"\n")
        return out

    def _table_line(self, line: bytes) -> bytes:
        event = orjson.loads(line)
        if isinstance(event.get("object"), dict) and event.get("type") not in ("ERROR",
                                                                               "BOOKMARK"):
            event["object"]["apiVersion"] = self._rtype.api_version(self._version)
            event["object"] = self.table(event["object"])  # type: ignore[misc]
        return orjson.dumps(event) + b"\n"

    def _bookmark_line(self, rv: int, initial_end: bool) -> bytes:
        meta: dict = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self._rtype.kind, "apiVersion": self._rtype.api_version(self._version),
               "metadata": meta}
        line = event_line("BOOKMARK", orjson.dumps(obj))
        return partial.event_line(line) if self._metadata_only else line

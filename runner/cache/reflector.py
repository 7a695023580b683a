"""The reflector: LIST then WATCH one collection into a store (as client-go
``tools/cache/reflector.go``).

Where it resumes from: the resourceVersion of the LIST's metadata, then of every watch event and
every BOOKMARK (never of list items). resourceVersions are opaque strings, never compared.

What it does when things go wrong:
  * a watch that ends cleanly (server timeout) is re-opened from the last resourceVersion, no
    relist;
  * 410 Gone/Expired (HTTP status from ``watch()``, during iteration, or an ERROR event) ends
    the watch and relists at once, first at the last resourceVersion, then, if that is expired
    too, with "" (a quorum read); "expired too" is a 410 on that LIST, or a second 410 on
    watching from it before any event arrived (a server that lists at a version it can no longer
    watch from, as kube-apiserver does for an exact paged LIST after a restart);
  * a watch that delivers nothing (no event, no bookmark) for longer than the inactivity limit
    (``inactivity_timeout``, default ``DEFAULT_INACTIVITY_TIMEOUT``: three bookmark intervals)
    is closed by a watchdog and re-opened from the last resourceVersion, no relist: a stalled
    proxy or load balancer, or a half-open connection, otherwise holds the reflector until the
    socket read timeout (the requested server timeout + 30 s, 5.5 to 10.5 minutes);
  * a watch opened after a failed one (connection, 429, 5xx, garbage: not a clean end) that
    stays silent past the inactivity limit relists at the last resourceVersion instead of
    re-opening: after a restart on an etcd restored from a backup or wiped, that version is
    ahead of the server, whose watch cache then sends nothing (kube-apiserver 1.20 serves a
    watch from a future version as a silent stream, ``watch_cache.go``
    ``GetAllEventsSinceThreadUnsafe``), and only a LIST can tell;
  * a LIST answering "Too large resource version" (504 Timeout with cause
    ResourceVersionTooLarge: the server is behind the version asked for) is retried with ""
    at once, as client-go's ``isTooLargeResourceVersionError``;
  * other errors (connection, 429, 5xx, other ERROR events) back off with jitter (800 ms
    doubling to 30 s, reset after 2 min without failures), then re-open the watch from the last
    resourceVersion (a LIST failure retries the LIST);
  * an object of the wrong kind is logged and skipped; ERROR events never reach the store.

What it tells others (read from any thread):
  * ``liveness()``: whether the reflector is wedged, for a liveness probe (``kinrun.probes``):
    running, and no progress (a LIST or a watch attempt coming back, whether it succeeded or
    failed, or any watch event, BOOKMARK included) for longer than its inactivity limit plus
    ``LIVENESS_GRACE``, not counting backoff pauses. A silent watch is re-opened by the
    watchdog at the limit, so a healthy idle reflector never gets there; a thread stuck in a
    handler, a deadlock, or a LIST or connect that hangs past the limit does;
  * an observer (``set_observer``, a :class:`ReflectorObserver`) hears of every relist and
    every watch restart with its reason (``kinrun.metrics`` counts them). This layer imports no
    metrics library: the observer is a plain object with two methods.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kinrun.cache.backoff import Backoff
from kinrun.cache.listwatch import ListerWatcher, Obj, Watch, WatchEvent
from kinrun.cache.store import resource_version
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import ExpiredError, api_error_from_status
from kinrun.threads import SupervisedThread

log = logging.getLogger("kinrun.reflector")

MIN_WATCH_TIMEOUT = 300.0
"""Seconds; each watch asks the server for a timeout in [MIN, 2*MIN) (client-go minWatchTimeout)."""

BOOKMARK_INTERVAL = 60.0
"""Seconds between the BOOKMARK events kube-apiserver sends to a watch that asked for them
(``allowWatchBookmarks=true``). Source: k8s.io/apiserver ``pkg/storage/cacher/cacher.go`` in
v1.20.2, ``defaultBookmarkFrequency = time.Minute``; ``cacheWatcher.nextBookmarkTime`` schedules
the next one a minute after the last ("roughly every minute", in 1-second time buckets), or
2 s before the watch's deadline if that is sooner. Caveats from the same file
(``Cacher.dispatchEvents``): no bookmark is sent until the watch cache has seen one event of
that resource since the server started, and resources served without a watch cache (core
Events) get none; such idle watches are re-opened by the watchdog every inactivity limit,
which costs one WATCH request and no LIST."""

DEFAULT_INACTIVITY_TIMEOUT = 3 * BOOKMARK_INTERVAL
"""Seconds (180) a watch may stay silent (no event, no bookmark) before the watchdog drops and
re-opens it: three bookmark intervals, so one late or lost bookmark never trips it. The one
place this default is written; config ``informers.<name>.watchInactivityTimeout`` overrides it."""


LIVENESS_GRACE = 30.0
"""Seconds past the inactivity limit before a reflector without progress reads as wedged: room
for the watchdog's re-open of a silent watch (a WATCH request; a connect may take 10 s and is
retried) so that the routine re-open never fails a liveness probe."""

WATCH_CLOSED, WATCH_STALLED, WATCH_EXPIRED, WATCH_ERROR = "closed", "stalled", "expired", "error"
"""Why a watch ended (``ReflectorObserver.watch_restarted``): the server ended it cleanly (its
timeout), the watchdog closed it (silent past the limit), 410 Gone (a relist follows), or it
failed (to open, or while streaming; a backoff follows)."""


@dataclass(frozen=True)
class Liveness:
    """A reflector's liveness at one instant (``Reflector.liveness``). ``name``: the
    reflector's; ``running``: between ``run`` starting and returning; ``idle``: seconds since
    its last progress (0 while a backoff pause is under way); ``limit``: seconds of no progress
    after which it is wedged (inactivity limit + LIVENESS_GRACE); ``wedged``: running and
    ``idle > limit``."""

    name: str
    running: bool
    idle: float
    limit: float

    @property
    def wedged(self) -> bool:
        """Running, and no progress for longer than ``limit`` seconds."""
        return self.running and self.idle > self.limit


class ReflectorObserver(Protocol):
    """Hears what a reflector does, on the reflector's thread: keep both methods quick and
    never raise. ``name``: the reflector's."""

    def relisted(self, name: str) -> None:
        """A LIST after the first one succeeded (after a 410, or a silent watch after a
        failure)."""
        ...

    def watch_restarted(self, name: str, reason: str) -> None:
        """A watch ended and another watch or a LIST follows; ``reason``: one of
        WATCH_CLOSED, WATCH_STALLED, WATCH_EXPIRED, WATCH_ERROR."""
        ...


class _NoObserver:
    """The default observer: hears nothing."""

    def relisted(self, name: str) -> None:
        """Nothing."""

    def watch_restarted(self, name: str, reason: str) -> None:
        """Nothing."""


_NO_OBSERVER = _NoObserver()


def too_large_resource_version(err: BaseException) -> bool:
    """True for kube-apiserver's "Too large resource version" answer: a LIST (or GET) at a
    resourceVersion newer than the server has, after waiting ~3 s for it (504 Timeout,
    ``details.causes[].reason`` ResourceVersionTooLarge; servers 1.17.0-1.18.5 only say it in
    ``causes[].message``). As client-go ``reflector.go`` ``isTooLargeResourceVersionError``."""
    body = getattr(err, "body", None) or {}
    causes = (body.get("details") or {}).get("causes") or [] if isinstance(body, dict) else []
    for cause in causes:
        if isinstance(cause, dict) and (cause.get("reason") == "ResourceVersionTooLarge"
                                        or cause.get("message") == "Too large resource version"):
            return True
    return getattr(err, "status", None) == 504 and "Too large resource version" in str(err)


class ReflectorStore(Protocol):
    """What the reflector writes to (a DeltaFIFO, or any Store)."""

    def add(self, obj: Obj) -> None: ...

    def update(self, obj: Obj) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def replace(self, objects: list[Obj], resource_version: str) -> None: ...

    def resync(self) -> None: ...


class _Stopped(Exception):
    """Internal: stop() was called."""


class Reflector:
    """Keeps ``store`` in step with the collection ``lister_watcher`` serves.

    ``kind``: expected ``kind`` of objects (others are skipped; objects without ``kind`` pass).
    ``resync_period`` (s, 0 = never): how often to ask ``should_resync()`` and call
    ``store.resync()``. ``inactivity_timeout`` (s, > 0): drop a silent watch (no event, no
    bookmark: every event, BOOKMARK and ERROR included, restarts the clock) after this long and
    re-open it from the last resourceVersion; None means ``DEFAULT_INACTIVITY_TIMEOUT``.
    Raises ValueError for a limit <= 0.

    Thread-safety: ``run`` is called once, from one thread (``start`` makes one); ``stop``,
    ``liveness`` and the read-only properties are thread-safe; ``set_observer`` is called
    before ``run``. ``_lock`` guards ``_watch`` and ``_stalled``. ``_progress_at`` and
    ``_last_activity`` are written by the reflector thread only and read by others without the
    lock (one float each, atomic under the GIL).
    """

    def __init__(self, lister_watcher: ListerWatcher, store: ReflectorStore, *,
                 kind: str | None = None, name: str = "", resync_period: float = 0.0,
                 should_resync: Callable[[], bool] | None = None, clock: Clock | None = None,
                 min_watch_timeout: float = MIN_WATCH_TIMEOUT,
                 inactivity_timeout: float | None = None, backoff: Backoff | None = None,
                 rand: random.Random | None = None) -> None:
        self._lw, self._store = lister_watcher, store
        self.kind, self.name = kind, name or (kind or "reflector")
        self.resync_period = resync_period
        self._should_resync = should_resync
        self._clock = clock or REAL_CLOCK
        self._min_watch_timeout = min_watch_timeout
        if inactivity_timeout is not None and inactivity_timeout <= 0:
            raise ValueError(f"inactivity_timeout must be > 0 seconds, got {inactivity_timeout!r}")
        self._inactivity_timeout = (DEFAULT_INACTIVITY_TIMEOUT if inactivity_timeout is None
                                    else float(inactivity_timeout))
        self._rand = rand or random.Random()
        self._backoff = backoff or Backoff(self._clock, rand=self._rand)
        self._stop = threading.Event()
        self._wakeup = threading.Event()  # ends backoff waits early (stop)
        self._watchdog_wakeup = threading.Event()  # a watch was armed, or stop
        self._resync_wakeup = threading.Event()  # resync period changed, or stop
        self._lock = threading.Lock()
        self._watch: Watch | None = None  # the open watch, for stop() and the watchdog
        self._watch_deadline_limit = 0.0  # inactivity limit of the open watch (s)
        self._stalled = False  # the watchdog closed the open watch
        self._last_activity = 0.0  # clock time of the last event on the open watch
        self._last_rv = ""  # resume point: list metadata, then every event/bookmark
        self._rv_unavailable = False  # the last rv was 410 on LIST: next list uses ""
        self._listed_rv = ""  # the resourceVersion of the last successful LIST
        self._stale_expiries = 0  # watches expired in a row with no event since the LIST
        self._failed_since_event = False  # a watch failed and no event has arrived since
        self._threads: list[threading.Thread] = []
        self._running = False  # between run() starting and returning
        self._progress_at = 0.0  # clock time of the last progress other than a watch event,
        #                          or the end of the backoff pause under way
        self._lists = 0  # successful LISTs so far (the first is not a relist)
        self._observer: ReflectorObserver = _NO_OBSERVER

    # -- public ------------------------------------------------------------------------------

    def set_observer(self, observer: ReflectorObserver) -> None:
        """Tell ``observer`` of every relist and watch restart (before ``run``)."""
        self._observer = observer

    def liveness(self) -> Liveness:
        """Whether this reflector is wedged, read now (see the module docstring)."""
        last = max(self._progress_at, self._last_activity)
        idle = max(0.0, self._clock.now() - last)
        return Liveness(self.name, self._running, idle,
                        self._inactivity_timeout + LIVENESS_GRACE)

    @property
    def inactivity_timeout(self) -> float:
        """Seconds a watch may stay silent before the watchdog re-opens it."""
        return self._inactivity_timeout

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch resumes from ("" before the first list)."""
        return self._last_rv

    def start(self) -> threading.Thread:
        """Run in a daemon thread; returns it."""
        thread = SupervisedThread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        """List and watch until ``stop()``. Never raises for API errors (they are logged)."""
        self._progress_at = self._clock.now()
        self._running = True
        self._start_helper(self._watchdog_loop, "watchdog")
        if self.resync_period > 0:
            self._start_helper(self._resync_loop, "resync")
        try:
            while not self._stop.is_set():
                self._list_and_watch()
        except _Stopped:
            pass
        finally:
            self._running = False
            self._stop.set()
            self._wake_helpers()
            for thread in self._threads:
                thread.join()

    def stop(self) -> None:
        """Ask ``run`` to return: wakes waits and closes the open watch (thread-safe)."""
        self._stop.set()
        self._wakeup.set()
        with self._lock:
            if self._watch is not None:
                self._watch.close()
        self._wake_helpers()

    # -- list --------------------------------------------------------------------------------

    def _list_and_watch(self) -> None:
        self._list()
        while True:
            if self._stop.is_set():
                raise _Stopped
            if not self._watch_once():
                return  # relist

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        return self._last_rv or "0"

    def _list(self) -> None:
        while True:
            if self._stop.is_set():
                raise _Stopped
            rv = self._relist_resource_version()
            try:
                result = self._lw.list(resource_version=rv)
            except ExpiredError as err:
                self._progress_at = self._clock.now()
                log.info("%s: list at resourceVersion %r expired (%s); relisting", self.name, rv, err)
                if rv == "":
                    self._pause()
                self._rv_unavailable = True
                continue
            except Exception as err:  # noqa: BLE001 - every failure is retried
                self._progress_at = self._clock.now()
                if rv != "" and too_large_resource_version(err):
                    log.warning("%s: list at resourceVersion %r is ahead of the server (%s); "
                                "relisting from the latest", self.name, rv, err)
                    self._rv_unavailable = True
                    continue
                log.warning("%s: list failed: %s", self.name, err)
                self._pause()
                continue
            self._rv_unavailable = False
            items = [o for o in result.items if self._kind_ok(o)]
            self._store.replace(items, result.resource_version)
            self._last_rv = self._listed_rv = result.resource_version
            self._progress_at = self._clock.now()
            self._lists += 1
            if self._lists > 1:
                self._observer.relisted(self.name)
            return

    # -- watch -------------------------------------------------------------------------------

    def _watch_once(self) -> bool:
        """One watch, start to end. Returns False when a relist is needed."""
        timeout = int(self._min_watch_timeout * (1.0 + self._rand.random()))
        try:
            watch = self._lw.watch(resource_version=self._last_rv, timeout_seconds=timeout,
                                   allow_bookmarks=True)
        except ExpiredError as err:
            log.info("%s: watch at %r expired (%s); relisting", self.name, self._last_rv, err)
            self._progress_at = self._clock.now()
            self._observer.watch_restarted(self.name, WATCH_EXPIRED)
            self._expired_since_list()
            return False
        except Exception as err:  # noqa: BLE001
            log.warning("%s: watch failed to open: %s", self.name, err)
            self._progress_at = self._clock.now()
            self._observer.watch_restarted(self.name, WATCH_ERROR)
            self._failed_since_event = True
            self._pause()
            return True
        return self._consume(watch, self._inactivity_timeout)

    def _expired_since_list(self) -> None:
        """Called when a watch expired. Twice in a row without any event moving past the last
        LIST's resourceVersion means the server lists at a version it cannot watch from
        (relisting there would loop), so the next LIST asks for the latest ("")."""
        if self._last_rv != self._listed_rv:
            self._stale_expiries = 0
            return
        self._stale_expiries += 1
        if self._stale_expiries >= 2:
            self._rv_unavailable = True
            self._stale_expiries = 0

    def _consume(self, watch: Watch, limit: float) -> bool:
        self._arm(watch, limit)
        try:
            for event in watch:
                self._last_activity = self._clock.now()
                self._failed_since_event = False
                self._handle(event)
        except ExpiredError as err:
            log.info("%s: watch expired (%s); relisting", self.name, err)
            self._observer.watch_restarted(self.name, WATCH_EXPIRED)
            self._expired_since_list()
            return False
        except Exception as err:  # noqa: BLE001
            if self._stop.is_set():
                raise _Stopped from err
            log.warning("%s: watch failed: %s", self.name, err)
            self._observer.watch_restarted(self.name, WATCH_ERROR)
            self._failed_since_event = True
            self._pause()
            return True
        finally:
            stalled = self._disarm(watch)
        self._observer.watch_restarted(self.name, WATCH_STALLED if stalled else WATCH_CLOSED)
        if stalled and self._failed_since_event:
            log.warning("%s: watch silent for over %.0f s since a failed watch; relisting at "
                        "resourceVersion %r (is the server behind it?)", self.name, limit,
                        self._last_rv)
            self._failed_since_event = False
            return False
        if stalled:  # INFO: routine for an idle resource the server sends no bookmarks for
            log.info("%s: watch silent (no event, no bookmark) for over %.0f s; re-opening "
                     "from resourceVersion %r", self.name, limit, self._last_rv)
        return True

    def _handle(self, event: WatchEvent) -> None:
        kind, obj = event.type, event.object
        if kind == "ERROR":
            raise api_error_from_status(0, obj if isinstance(obj, dict) else None)
        if kind == "BOOKMARK":
            self._last_rv = resource_version(obj) or self._last_rv
            return
        if not self._kind_ok(obj):
            return
        if kind == "ADDED":
            self._store.add(obj)
        elif kind == "MODIFIED":
            self._store.update(obj)
        elif kind == "DELETED":
            self._store.delete(obj)
        else:
            log.warning("%s: skipping watch event of unknown type %r", self.name, kind)
            return
        self._last_rv = resource_version(obj) or self._last_rv

    def _kind_ok(self, obj: Any) -> bool:
        if not isinstance(obj, dict):
            log.error("%s: skipping watch object that is not a mapping: %r", self.name, type(obj))
            return False
        got = obj.get("kind")
        if self.kind is None or got is None or got == self.kind:
            return True
        log.error("%s: expected kind %s, got %s; skipping", self.name, self.kind, got)
        return False

    # -- watchdog, resync, waits ---------------------------------------------------------------

    def _arm(self, watch: Watch, limit: float) -> None:
        with self._lock:
            if self._stop.is_set():
                watch.close()
            self._watch, self._watch_deadline_limit, self._stalled = watch, limit, False
            self._last_activity = self._clock.now()
        self._watchdog_wakeup.set()

    def _disarm(self, watch: Watch) -> bool:
        with self._lock:
            self._watch = None
            stalled = self._stalled
        watch.close()
        if self._stop.is_set():
            raise _Stopped
        return stalled

    def _watchdog_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                watch = self._watch
                deadline = self._last_activity + self._watch_deadline_limit \
                    if watch is not None else None
                if deadline is not None and deadline <= self._clock.now():
                    self._stalled = True
                    watch.close()  # type: ignore[union-attr]
                    self._watch = None
                    continue
            self._clock.wait_until(self._watchdog_wakeup, deadline)
            self._watchdog_wakeup.clear()

    def _resync_loop(self) -> None:
        while not self._stop.is_set():
            period = self.resync_period
            self._clock.wait(self._resync_wakeup, period if period > 0 else None)
            self._resync_wakeup.clear()
            if self._stop.is_set():
                return
            if period > 0 and (self._should_resync is None or self._should_resync()):
                self._store.resync()

    def _start_helper(self, target: Callable[[], None], what: str) -> None:
        thread = SupervisedThread(target=target, name=f"reflector-{self.name}-{what}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _wake_helpers(self) -> None:
        self._watchdog_wakeup.set()
        self._resync_wakeup.set()

    def wake_resync(self) -> None:
        """Re-read ``resync_period`` now (after an informer changed it)."""
        self._resync_wakeup.set()

    def _pause(self) -> None:
        """Back off with jitter; raise _Stopped if stopped meanwhile. The pause is no lack of
        progress: ``_progress_at`` is moved to its end."""
        delay = self._backoff.next_delay()
        self._progress_at = self._clock.now() + delay
        self._clock.wait(self._wakeup, delay)
        if self._stop.is_set():
            raise _Stopped
        self._wakeup.clear()

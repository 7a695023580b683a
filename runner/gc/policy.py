"""Python garbage-collector policy for large informer caches.

A cache of tens of thousands of dicts makes every full (generation 2) collection walk all of
them: pauses of up to a second that stall every thread (measured in BENCHMARKS.md). kinrun's
policy (``manage``), applied by the Manager before its informers start (the pipeline reports to
it through ``kinrun.gc.observer``, which ``manage`` installs it in):

  * ``raise_thresholds``: automatic collections run less often (gen0 every 100,000 net
    allocations);
  * ``freeze_survivors``: after every collection (of any generation), its survivors move to
    the permanent generation (``gc.freeze``), so no collection ever walks the cache again,
    only objects younger than one young collection;
  * ``watch_read`` and ``decoded(nbytes, since)``: what a watch event decodes is frozen at
    once, never walked. At the start of the events one socket read brought, with no
    reconcile running on any controller worker (``reconciling``, kept by
    ``reconcile_started``/``reconcile_finished``), the decoding thread runs
    one young collection if a reconcile ran since the last freeze (it walks what those
    reconciles left, their cycles dead by then, not cached objects) and takes the reconcile
    ``epoch``. After decoding each event of that read, if no reconcile has started since
    (the ``epoch`` unchanged: no other worker took the GIL meanwhile), ``gc.freeze()``
    (constant time: it splices the generations' lists) moves the new object, and what this
    thread allocated since, into the permanent generation. Measured
    (``benchmarks/replay.py``, 30,000 events of 9.1 KB): the collections' CPU went from
    0.16-0.65 s to 0.01-0.03 s, and the 1,000,000-event soak no longer freezes the hook's
    cycles (``benchmarks/gc_soak.py``; benchmarks/HISTORY.md "Round 4");
  * otherwise, young collections by the bytes decoded, not only by net allocations. CPython
    counts net allocations (``gc.get_count()[0]``) and a freed frozen object counts as a
    deallocation: in an informer's steady state every decoded update frees the frozen version
    it replaces, so the count stays near 0 while generation 0 fills with every object decoded
    since the last collection; the collection that finally comes walks all of them (measured:
    gen-0 pauses of 20-190 ms CPU and 0.6 s wall at the end of 100,001 events with a templated
    action, ``benchmarks/replay.py``). The kube layer reports each decoded watch event's size
    that it could not freeze (a reconcile started during its read). Every
    ``YOUNG_COLLECTION_BYTES`` a young collection is due: a controller's worker runs it
    between two reconciles (``collect_if_due``), when no reconcile of that worker holds
    garbage that is still alive (a cycle alive at a collection would be frozen with the
    survivors), or the decoding thread itself once twice that much is pending (no worker got
    to it: workers busy or behind the reflector). Each walks at most the objects of ~512 KB
    of JSON;
  * ``freeze`` once the initial lists are cached.

The trade-off: cyclic garbage that is alive at a collection and dies later (or that exists,
dead or alive, at any other freeze: the end of a LIST, the Manager's start) is never
collected by the policy's collections (frozen objects are freed by reference counting only).
Collections run between reconciles, so a reconcile's own cycles are dead by then with one
worker; with several, another worker's reconcile in flight can lose its cycles to a freeze
of ``collect_if_due`` (never to ``watch_read``'s, which waits until no reconcile runs), and
code running on other threads (asynchronous event handlers, plugin threads) can lose its
cycles to any collection or freeze.
Cached objects are plain acyclic dicts, so they are freed as usual; but reconcile code that
builds reference cycles (``a["self"] = a``, parent <-> child links) living a little while leaks
slowly for as long as the process runs. The cure is ``collect_frozen``: unfreeze, one full
collection, freeze again; it pauses every thread for a full collection (about 0.8 s with
10,000 Pods cached), so the main job runs it only when asked, every ``gc.collectFrozenEvery``
of the config (``Manager.collect_frozen_garbage``). ``unfreeze`` and
``stop_freezing_survivors`` undo the policy. ``GCPauseRecorder`` measures pauses via
``gc.callbacks``.

Thread-safety: ``collect_frozen``, ``freeze_survivors``, ``stop_freezing_survivors`` and
``unfreeze`` are serialized by one module lock (``_lock``), so the policy is never undone
halfway through a ``collect_frozen``, nor re-applied by one after ``unfreeze``. The other
functions make single ``gc`` calls (GCPauseRecorder: see its docstring).
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kinrun.gc import observer

_lock = threading.RLock()
"""Serializes changes to the policy's callback and the unfreeze/freeze of ``collect_frozen``.
Reentrant: a finalizer run by ``collect_frozen``'s collection may call these functions."""

DEFAULT_THRESHOLDS = (100_000, 20, 100)
"""gen0 net allocations, gen1 and gen2 collection counts (CPython's default is (700, 10,
10)). The young collections ``collect_if_due`` runs reset the net count, so the automatic
ones (which may strike in the middle of a reconcile, freezing its live cycles) are rare: they
come only after 100,000 net allocations without a due collection (cyclic garbage alone, or a
LIST)."""

YOUNG_COLLECTION_BYTES = 256 * 1024
"""Bytes of decoded watch events after which a young collection is due (``decoded``): about
40 Pods of 6 KB (managedFields cut), ~16,000 container objects, a pause of a few ms."""

epoch = 0
"""Reconciles started in this process (each controller worker adds 1 before each reconcile, no
lock: two workers adding at once may lose one count, but the value still changes, which is
all ``decoded`` asks of it)."""

reconciling: dict[int, bool] = {}
"""Thread ident -> True while that thread runs a reconcile (``kinrun.controller``'s workers set
their own entry before a reconcile and clear it after; an ended worker removes it). No lock:
each entry is written only by its own thread and a dict item store is atomic under the GIL;
``watch_read`` reads the values in one C call. While any entry is True, the decoding thread
neither collects nor freezes (below twice ``YOUNG_COLLECTION_BYTES`` pending): it leaves the
young collection to the workers (``collect_if_due`` between reconciles), so a reconcile's
cycles that are still alive are not frozen with the survivors."""

_frozen_at = -1  # the ``epoch`` of the last freeze by ``decoded``: no reconcile has run since
# while ``epoch`` still equals it, so ``watch_read`` has nothing to collect (decoding thread only)
_pending_bytes = 0  # decoded since the last young collection (approximate, see ``decoded``);
# a young collection is due (the next ``collect_if_due`` runs it) once it reaches
# YOUNG_COLLECTION_BYTES


def raise_thresholds(thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> tuple[int, ...]:
    """Set ``gc.set_threshold(*thresholds)``; returns the previous thresholds."""
    previous = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return previous


def freeze(collect: bool = False) -> None:
    """Move every tracked object into the permanent generation (``gc.freeze``). ``collect``:
    run a full collection first (a pause proportional to the cache: off by default)."""
    if collect:
        gc.collect()
    gc.freeze()


def _freeze_collection_survivors(phase: str, info: dict[str, Any]) -> None:
    global _pending_bytes
    if phase == "stop":
        gc.freeze()
        _pending_bytes = 0


def watch_read() -> int | None:
    """Call before decoding the events one socket read brought. With the policy on and no
    reconcile running on any controller worker (``reconciling``): runs a young collection
    if a reconcile started since the last freeze by ``decoded`` (what those reconciles left:
    their cycles are dead now) and returns the reconcile ``epoch`` to pass to ``decoded``;
    otherwise (or with the GC or the policy off) None. Cost: a few tests; the collection
    walks only objects allocated since the last freeze (a few microseconds, most of it
    ``gc.callbacks``). Called by the thread that decodes the read (``StreamWatch``)."""
    if (gc.isenabled() and _freeze_collection_survivors in gc.callbacks
            and True not in reconciling.values()):
        now = epoch
        if now != _frozen_at:  # reconciles ran since the last freeze: collect what they left
            _collect_young()  # survivors frozen by the policy's callback
        return now
    return None


def decoded(nbytes: int, since: int | None = None) -> None:
    """Report ``nbytes`` of decoded JSON that the caller keeps (a watch event's object, bound
    for the cache). ``since``: what ``watch_read`` returned for this event's read. When no
    reconcile started since (``epoch`` unchanged), everything young is frozen at once
    (``gc.freeze``: the object just decoded, and what this thread allocated after
    ``watch_read``'s collection) and nothing else happens. Otherwise the bytes are counted:
    after ``YOUNG_COLLECTION_BYTES`` a young collection is due (run by the next
    ``collect_if_due``); after twice that with none run, it runs here whatever runs
    elsewhere. Cheap (a compare and a freeze, or an add and a compare). Any thread; the
    count is updated without a lock (two threads adding at once may lose a count: a
    collection comes a little later, nothing else)."""
    global _pending_bytes, _frozen_at
    if since is not None and since == epoch and _freeze_collection_survivors in gc.callbacks:
        gc.freeze()
        _pending_bytes, _frozen_at = 0, since
        return
    _pending_bytes += nbytes
    if _pending_bytes >= 2 * YOUNG_COLLECTION_BYTES:
        _collect_young()


def reconcile_started(worker: int) -> None:
    """A controller worker (thread ident ``worker``) starts a reconcile: mark it in
    ``reconciling`` and count one ``epoch``."""
    global epoch
    reconciling[worker] = True
    epoch += 1


def reconcile_finished(worker: int) -> None:
    """That reconcile ended (returned or raised)."""
    reconciling[worker] = False


def worker_ended(worker: int) -> None:
    """A controller worker thread ends: forget its entry."""
    reconciling.pop(worker, None)


def pause_ended() -> None:
    """A freezing pause ended with the collector enabled (``kinrun.gc.pause``): what the
    block made (a LIST's objects) survives, so freeze it now, walk it never."""
    if freezing_survivors():
        gc.freeze()


def collect_if_due() -> None:
    """Run the young collection ``decoded`` made due, if any: call it where no garbage of the
    caller's is alive (a controller worker between two reconciles). One test when none is
    due."""
    if _pending_bytes >= YOUNG_COLLECTION_BYTES:
        _collect_young()


def _collect_young() -> None:
    global _pending_bytes
    _pending_bytes = 0
    if gc.isenabled() and _freeze_collection_survivors in gc.callbacks:
        gc.collect(0)


def freeze_survivors() -> None:
    """From now on, freeze the survivors of every collection (idempotent), and install
    ``OBSERVER`` (``kinrun.gc.observer``: the pipeline reports to the policy)."""
    with _lock:
        _add_callback_locked()
        observer.install(OBSERVER)


def freezing_survivors() -> bool:
    """Whether ``freeze_survivors`` is in effect (False while a ``collect_frozen`` runs)."""
    return _freeze_collection_survivors in gc.callbacks


def stop_freezing_survivors() -> None:
    """Undo ``freeze_survivors`` (the no-op observer installed again)."""
    with _lock:
        _remove_callback_locked()
        observer.install(observer.NO_GC_OBSERVER)


def _add_callback_locked() -> None:
    if _freeze_collection_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_collection_survivors)


def _remove_callback_locked() -> None:
    if _freeze_collection_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_collection_survivors)


class PolicyOffError(RuntimeError):
    """``collect_frozen`` was called while kinrun's GC policy is off (``freeze_survivors`` not
    in effect): its final ``gc.freeze()`` would impose the policy on a process without it."""


@dataclass(frozen=True)
class FrozenCollection:
    """What one ``collect_frozen`` did: ``seconds`` the collection paused every thread
    (unfreeze, full collection, freeze), ``collected`` the unreachable objects it found and
    freed (``gc.collect()``'s count: cyclic garbage, frozen or not), ``frozen`` the objects
    frozen back (``gc.get_freeze_count()`` after)."""

    seconds: float
    collected: int
    frozen: int


def collect_frozen() -> FrozenCollection:
    """Collect the cyclic garbage the policy froze: ``gc.unfreeze()``, a full ``gc.collect()``,
    then ``gc.freeze()`` again (what survives is frozen back). Returns a FrozenCollection
    (seconds paused, objects collected) for the caller to log.

    Cost: the full collection walks every live container object with the GIL held, so it
    pauses every thread for a time proportional to their number. Measured (CPython 3.11, two
    cores, another process busy on one): with 10,000 decoded Pods cached (``benchmarks/podgen.py``
    ``make_pod``, decoded by ``kinrun.kube.jsondecode``; ~660,000 container objects frozen in
    all) one call pauses 0.6-0.9 s (medians 0.7-0.8 s); with managedFields kept (~1,140,000
    objects) 0.8-1.5 s. Run it every few minutes at most, never per event.

    Thread-safety: callable from any thread; calls are serialized with each other and with
    ``freeze_survivors``/``stop_freezing_survivors``/``unfreeze`` by the module lock. While it
    runs, the policy's callback is off, so a gen-0 collection on another thread between the
    unfreeze and the full collection cannot freeze everything back before it is walked.

    Must not run while the policy is off: it would end in ``gc.freeze()``, imposing the
    policy's trade-off on a process that does not use it (or that undid it with ``unfreeze``).
    Raises PolicyOffError then, without touching the collector.
    """
    with _lock:
        if not freezing_survivors():
            raise PolicyOffError("kinrun's GC policy is off "
                                 "(kinrun.gc.policy.manage not in effect)")
        _remove_callback_locked()
        try:
            start = time.perf_counter()
            gc.unfreeze()
            collected = gc.collect()
            gc.freeze()
            seconds = time.perf_counter() - start
        finally:
            _add_callback_locked()
        return FrozenCollection(seconds, collected, gc.get_freeze_count())


class _PolicyObserver:
    """The policy as the pipeline's ``kinrun.gc.observer.GCObserver``: this module's
    functions, as static methods (a call costs what the module function's did)."""

    watch_read = staticmethod(watch_read)
    decoded = staticmethod(decoded)
    reconcile_started = staticmethod(reconcile_started)
    reconcile_finished = staticmethod(reconcile_finished)
    between_reconciles = staticmethod(collect_if_due)
    worker_ended = staticmethod(worker_ended)
    pause_ended = staticmethod(pause_ended)


OBSERVER: observer.GCObserver = _PolicyObserver()
"""What ``freeze_survivors`` (``manage``) installs (``kinrun.gc.observer.install``)."""


def manage(thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> tuple[int, ...]:
    """kinrun's policy (module docstring): raised thresholds, survivors of collections frozen
    (``OBSERVER`` installed: the pipeline reports to it). Returns the previous thresholds, for
    ``unfreeze``."""
    previous = raise_thresholds(thresholds)
    freeze_survivors()
    return previous


def unfreeze(thresholds: tuple[int, ...] = (700, 10, 10)) -> None:
    """Undo: stop freezing survivors, put the no-op observer back, ``gc.unfreeze()`` and
    restore thresholds. Waits for a ``collect_frozen`` running on another thread to end."""
    with _lock:
        _remove_callback_locked()
        observer.install(observer.NO_GC_OBSERVER)
        gc.unfreeze()
        gc.set_threshold(*thresholds)


@dataclass
class GCPauseRecorder:
    """Records every collection's generation and duration (s) through ``gc.callbacks``.

    Use as a context manager. Not thread-safe for concurrent start/stop (the callbacks
    themselves run under the GIL)."""

    pauses: list[tuple[int, float]] = field(default_factory=list)
    _start: float = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((info.get("generation", -1), time.perf_counter() - self._start))

    def __enter__(self) -> GCPauseRecorder:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> dict[str, float]:
        """count, total_s, max_s, and full (gen 2) collection count."""
        durations = [d for _, d in self.pauses]
        return {"count": len(durations), "total_s": sum(durations),
                "max_s": max(durations, default=0.0),
                "gen2_count": sum(1 for g, _ in self.pauses if g == 2)}

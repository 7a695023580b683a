"""The seam between the pipeline and kinrun's GC policy: ``GCObserver``, and the one installed.

The decoder and LIST path (``kinrun.kube``), the shared informer (``kinrun.cache``) and the
controller's workers tell the installed observer what they do (a watch read starts, an event
was decoded, a reconcile starts or ends, a freezing pause ended); they never read or write the
policy's state themselves. The default, ``NO_GC_OBSERVER``, does nothing: a process without
kinrun's policy (a library user, ``kinrun test``) keeps CPython's collector as it is.
``kinrun.gc.policy.manage`` (``freeze_survivors``) installs the policy's observer (the main job:
``Manager.start`` with ``gc_policy``); ``unfreeze`` puts the default back.

The collector is one per process, so the seam is one per process too: ``installed()`` is read
once per watch stream, per reconcile and per freezing pause, never per event. Cost on the hot
paths: one attribute lookup of a method and its call, as the module functions it replaced
(the observers' methods are static: no bound method is allocated).

Thread-safety: ``install`` is a single global store (atomic under the GIL); a caller keeps the
observer it read for a reconcile's start and end, so a swap in between pairs them right.
"""

from __future__ import annotations

from typing import Protocol


class GCObserver(Protocol):
    """What the pipeline reports to a GC policy. ``worker`` is a thread ident."""

    def watch_read(self) -> int | None:
        """The events of one socket read are about to be decoded (the decoding thread).
        Returns a token to pass to ``decoded`` for each of them, or None."""
        ...

    def decoded(self, nbytes: int, since: int | None) -> None:
        """A watch event of ``nbytes`` bytes of JSON was decoded and is kept (bound for the
        cache); ``since``: what ``watch_read`` returned for its read."""
        ...

    def reconcile_started(self, worker: int) -> None:
        """A controller worker starts a reconcile."""
        ...

    def reconcile_finished(self, worker: int) -> None:
        """That reconcile ended (returned or raised)."""
        ...

    def between_reconciles(self) -> None:
        """A worker is between two reconciles: none of its garbage is alive."""
        ...

    def worker_ended(self, worker: int) -> None:
        """A controller worker thread ends."""
        ...

    def pause_ended(self) -> None:
        """A freezing pause (a whole LIST, a DeltaFIFO Replace; ``kinrun.gc.pause``) ended
        with the collector enabled: what it made survives."""
        ...


class _NoGCObserver:
    """The default: every report ignored (CPython's collector as it is)."""

    @staticmethod
    def watch_read() -> None:
        return None

    @staticmethod
    def decoded(nbytes: int, since: int | None) -> None:
        pass

    @staticmethod
    def reconcile_started(worker: int) -> None:
        pass

    reconcile_finished = worker_ended = reconcile_started

    @staticmethod
    def between_reconciles() -> None:
        pass

    pause_ended = between_reconciles


NO_GC_OBSERVER: GCObserver = _NoGCObserver()
"""The observer installed when no policy is: does nothing."""

_installed: GCObserver = NO_GC_OBSERVER


def installed() -> GCObserver:
    """The observer in effect now (``NO_GC_OBSERVER`` unless a policy installed one)."""
    return _installed


def install(observer: GCObserver) -> GCObserver:
    """Make ``observer`` the one in effect; returns the previous one. Called by
    ``kinrun.gc.policy.manage`` and ``unfreeze``; a test may install its own."""
    global _installed
    previous, _installed = _installed, observer
    return previous

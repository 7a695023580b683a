"""Fakes for the reconcile tests: a primary informer over an in-memory collection, wired to
a Controller and a Reconciler as the Manager wires them, with a recording hook."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipeline"))

from pipeline_fakes import Recorder  # noqa: E402

from kinrun.cache import SharedIndexInformer  # noqa: E402
from kinrun.clock import FakeClock  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.bound import RecordDeletions  # noqa: E402
from kinrun.reconcile import Reconciler  # noqa: E402
from kinrun.testing.memory import MemoryListerWatcher  # noqa: E402
from kinrun.workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue  # noqa: E402

WAIT = 5.0


class HookRecorder:
    """A ``hooks`` callable recording ``(key, obj uid or None, old uid, ctx.reason)`` per call;
    ``script(obj) -> delay | raise`` decides what each call does. Tests wait on it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.script = lambda obj, ctx: None

    def __call__(self, controller: str, key: str, obj: Any, ctx: Any) -> Any:
        uid = lambda o: (o or {}).get("metadata", {}).get("uid")  # noqa: E731
        call = {"key": key, "uid": uid(obj), "old": ctx.old, "old_uid": uid(ctx.old),
                "reason": ctx.reason, "cause": ctx.cause, "deleted": obj is None}
        with self.cond:
            self.calls.append(call)
            self.cond.notify_all()
        return self.script(obj, ctx)

    def wait(self, predicate, timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self.calls), timeout)

    def deletions(self) -> list[dict[str, Any]]:
        with self.cond:
            return [c for c in self.calls if c["deleted"]]


class Pipeline:
    """informer -> RecordDeletions + own-key handler -> Controller(causes) -> Reconciler."""

    def __init__(self, clock: FakeClock, *, matches=None, confirm_gone=None, workers: int = 1):
        self.clock = clock
        self.server = MemoryListerWatcher()
        self.hook = HookRecorder()
        self.reconciler = Reconciler("test", hooks=self.hook, confirm_gone=confirm_gone)
        self.queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0),
                                       DelayingQueue(clock=clock))
        self.reconciles: list[tuple[str, Any]] = []  # (key, Result) of every reconcile
        self.cond = threading.Condition()
        self.controller = Controller("test", self.queue, self._get, self._reconcile,
                                     workers=workers, causes=True, on_drop=self.reconciler.forget)
        self.informer = SharedIndexInformer(self.server, kind="Pod")
        self.informer.add_event_handler(
            RecordDeletions(enqueue_own_key(self.controller.enqueue, causes=True),
                            self.reconciler, matches), synchronous=True)
        self.events = Recorder()  # every notification the informer delivered, to wait on
        self.informer.add_event_handler(self.events, synchronous=True)

    def _get(self, key: str) -> Any:
        return self.informer.lister.get(key)

    def _reconcile(self, key: str, obj: Any, cause: Any) -> Any:
        result = self.reconciler(key, obj, cause)
        with self.cond:
            self.reconciles.append((key, result))
            self.cond.notify_all()
        return result

    def wait_reconciles(self, n: int, timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.reconciles) >= n, timeout)

    def start(self, controller: bool = True) -> None:
        self.informer.start()
        assert self.informer.wait_for_sync(WAIT)
        if controller:
            self.controller.start()

    def cached_uid(self, key: str) -> str | None:
        obj = self.informer.lister.get(key)
        return obj["metadata"].get("uid") if obj else None

    def stop(self) -> None:
        self.informer.stop()
        self.controller.stop(WAIT)

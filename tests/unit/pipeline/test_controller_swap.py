"""Controller.pause / resume / retire: the hot reload barrier (kinrun.reload). A swapped
definition takes over the same workqueue; no reconcile starts under the old definition once
resume(successor) returned, none runs under both, and a retired controller starts none."""

from __future__ import annotations

import threading

from kinrun.controller import Controller
from kinrun.workqueue import RateLimitingQueue

WAIT = 10.0


def test_pause_waits_for_the_running_reconcile_and_resume_swaps_the_definition() -> None:
    queue = RateLimitingQueue(name="c")
    entered, release = threading.Event(), threading.Event()
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def old(key, obj):
        seen.append(("old", key))
        if key == "k1":
            entered.set()
            release.wait(WAIT)

    def new(key, obj):
        seen.append(("new", key))
        # k2 (taken by a paused worker) and k3 run on different workers after the swap, in
        # either order: done once both ran
        if {("new", "k2"), ("new", "k3")} <= set(seen):
            done.set()

    controller = Controller("c", queue, lambda key: None, old, workers=2)
    controller.start()
    try:
        controller.enqueue("k1")
        assert entered.wait(WAIT)
        paused = []
        pauser = threading.Thread(target=lambda: paused.append(controller.pause(WAIT)))
        pauser.start()
        pauser.join(0.2)
        assert pauser.is_alive()  # k1 still runs under the old definition
        controller.enqueue("k2")  # queued while pausing: must run under the new one
        release.set()
        pauser.join(WAIT)
        assert paused == [True]
        controller.resume(Controller("c", queue, lambda key: None, new, workers=3))
        controller.enqueue("k3")
        assert done.wait(WAIT)
        assert ("old", "k1") in seen and ("new", "k2") in seen and ("new", "k3") in seen
        assert ("old", "k2") not in seen
        assert controller.workers == 3
    finally:
        controller.stop(1.0)


def test_pause_times_out_and_leaves_the_controller_running() -> None:
    queue = RateLimitingQueue(name="c")
    entered, release = threading.Event(), threading.Event()
    ran = threading.Event()

    def reconcile(key, obj):
        if key == "slow":
            entered.set()
            release.wait(WAIT)
        else:
            ran.set()
    controller = Controller("c", queue, lambda key: None, reconcile, workers=2)
    controller.start()
    try:
        controller.enqueue("slow")
        assert entered.wait(WAIT)
        assert not controller.pause(0.05)
        controller.enqueue("quick")  # not paused any more: the second worker takes it
        assert ran.wait(WAIT)
    finally:
        release.set()
        controller.stop(1.0)


def test_retire_starts_no_queued_key() -> None:
    queue = RateLimitingQueue(name="c")
    entered, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def reconcile(key, obj):
        seen.append(key)
        if key == "first":
            entered.set()
            release.wait(WAIT)
    controller = Controller("c", queue, lambda key: None, reconcile, workers=1)
    controller.start()
    controller.enqueue("first")
    assert entered.wait(WAIT)
    controller.enqueue("second")
    retiring = threading.Thread(target=controller.retire, args=(WAIT,))
    retiring.start()
    release.set()
    retiring.join(WAIT)
    assert not retiring.is_alive()
    assert seen == ["first"]

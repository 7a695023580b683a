"""kinrun's GC policy leaks cyclic garbage that lives through a gen-0 collection (its survivors
are frozen); ``gc_tuning.collect_frozen`` reclaims it. Deterministic: the soak counts on the
policy's thresholds (a gen-0 collection every 10,000 net allocations), not on time."""

from __future__ import annotations

import gc
import weakref
from collections import deque
from collections.abc import Iterator

import pytest

from kinrun.cache import gc_tuning

ROUNDS = 2_000      # reconciles of the soak
CHILDREN = 50       # nodes per cycle: a round allocates CHILDREN + 2 containers that only a
                    # collection frees, so the soak makes ~100,000 net allocations (~10 gen-0s)
IN_FLIGHT = 4       # cycles alive at any time (a reconcile's working set, briefly kept)


class Node:
    """A tree node linked to its parent: a node with children is in a reference cycle."""

    __slots__ = ("parent", "children", "__weakref__")

    def __init__(self, parent: Node | None) -> None:
        self.parent = parent
        self.children: list[Node] = []


def short_lived_cycle() -> Node:
    root = Node(None)
    root.children = [Node(root) for _ in range(CHILDREN)]
    return root


def soak() -> tuple[list[weakref.ref[Node]], int]:
    """ROUNDS short-lived cycles, each alive for IN_FLIGHT rounds among acyclic cache updates,
    all dropped at the end. Returns a weak reference per cycle and the gen-0 collections seen."""
    refs: list[weakref.ref[Node]] = []
    in_flight: deque[Node] = deque()
    cache: dict[int, dict] = {}
    with gc_tuning.GCPauseRecorder() as pauses:
        for i in range(ROUNDS):
            cycle = short_lived_cycle()
            refs.append(weakref.ref(cycle))
            in_flight.append(cycle)
            if len(in_flight) > IN_FLIGHT:
                in_flight.popleft()
            cache[i % 100] = {"metadata": {"name": f"p{i}", "labels": {"n": str(i)}},
                              "spec": {"containers": [{"name": "app"}]}}
        del cycle
        in_flight.clear()
    return refs, sum(1 for generation, _ in pauses.pauses if generation == 0)


def alive(refs: list[weakref.ref[Node]]) -> int:
    return sum(1 for ref in refs if ref() is not None)


@pytest.fixture
def policy() -> Iterator[None]:
    """kinrun's GC policy (``gc_tuning.manage``) for one test, undone afterwards."""
    assert gc.isenabled() and not gc_tuning.freezing_survivors()
    before = gc_tuning.manage()
    try:
        yield
    finally:
        gc_tuning.unfreeze(before)


def test_soak_leaks_cycles_under_the_policy_and_collect_frozen_reclaims_them(policy) -> None:
    """Cycles alive at a gen-0 collection outlive a full gc.collect(); collect_frozen frees
    every one and freezes the survivors back, the policy still on."""
    refs, gen0_collections = soak()
    assert gen0_collections >= 5  # the thresholds drove collections while cycles were alive
    gc.collect()  # a full collection, as CPython would run one: it never walks frozen objects
    leaked = alive(refs)
    # in flight at a gen-0 pass: IN_FLIGHT kept, plus the one just made
    assert 0 < leaked <= (IN_FLIGHT + 1) * gen0_collections
    gc.collect()
    assert alive(refs) == leaked

    done = gc_tuning.collect_frozen()

    assert alive(refs) == 0
    assert done.collected >= leaked * (CHILDREN + 2)
    assert done.seconds > 0 and done.frozen > 0 and gc.get_freeze_count() > 0
    assert gc_tuning.freezing_survivors() and gc.get_threshold() == gc_tuning.DEFAULT_THRESHOLDS


def test_without_the_policy_every_cycle_is_collected() -> None:
    """The same soak with CPython's own policy leaks nothing: the leak is the policy's."""
    assert not gc_tuning.freezing_survivors()
    refs, _ = soak()
    gc.collect()
    assert alive(refs) == 0


def test_collect_frozen_refuses_to_run_while_the_policy_is_off() -> None:
    """With the policy off, collect_frozen raises PolicyOffError and freezes nothing."""
    assert not gc_tuning.freezing_survivors()
    with pytest.raises(gc_tuning.PolicyOffError):
        gc_tuning.collect_frozen()
    assert gc.get_freeze_count() == 0 and not gc_tuning.freezing_survivors()


def test_the_policy_callback_is_off_during_the_full_collection(policy) -> None:
    """While collect_frozen's collection runs, no gen-0 collection can freeze things back."""
    seen: list[bool] = []

    def record(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(gc_tuning.freezing_survivors())

    gc.callbacks.append(record)
    try:
        gc_tuning.collect_frozen()
    finally:
        gc.callbacks.remove(record)
    assert seen == [False] and gc_tuning.freezing_survivors()

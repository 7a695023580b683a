"""kinrun's GC policy leaks cyclic garbage that is alive at a collection (its survivors are
frozen); ``gc_tuning.collect_frozen`` reclaims it. A watch read collects what reconciles
left before it freezes what it decodes (``gc_tuning.watch_read``, ``decoded``); otherwise
young collections, due by decoded volume, run between reconciles (``collect_if_due``), where
a reconcile's cycles are dead: those are reclaimed. Deterministic: collections are driven
through the policy's own triggers, not by time."""

from __future__ import annotations

import gc
import threading
import weakref
from collections import deque
from collections.abc import Iterator

import pytest

from kinrun.gc import policy as gc_tuning

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


def soak(in_flight_size: int = IN_FLIGHT,
         between: bool = False) -> tuple[list[weakref.ref[Node]], int]:
    """ROUNDS short-lived cycles, each alive for ``in_flight_size`` rounds among acyclic cache
    updates, all dropped at the end; every 50 rounds the decoder reports enough bytes that a
    young collection runs at once (``between``: it is only made due, and runs after the
    round, as a controller worker runs it between reconciles). Returns a weak reference per
    cycle and the gen-0 collections seen."""
    refs: list[weakref.ref[Node]] = []
    in_flight: deque[Node] = deque()
    cache: dict[int, dict] = {}
    with gc_tuning.GCPauseRecorder() as pauses:
        for i in range(ROUNDS):
            if i % 50 == 0:
                factor = 1 if between else 2
                gc_tuning.decoded(gc_tuning.YOUNG_COLLECTION_BYTES * factor)
            cycle = short_lived_cycle()
            refs.append(weakref.ref(cycle))
            in_flight.append(cycle)
            cache[i % 100] = {"metadata": {"name": f"p{i}", "labels": {"n": str(i)}},
                              "spec": {"containers": [{"name": "app"}]}}
            if len(in_flight) > in_flight_size:
                in_flight.popleft()
            del cycle
            if between:
                gc_tuning.collect_if_due()
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


def test_young_collections_between_reconciles_leak_no_reconcile_cycle(policy) -> None:
    """A cycle that dies with its reconcile is dead when the due collection runs between two
    reconciles: a plain full collection reclaims every one, no collect_frozen needed."""
    refs, gen0_collections = soak(in_flight_size=0, between=True)
    assert gen0_collections >= ROUNDS // 50 - 1  # the volume trigger ran them
    gc.collect()
    assert alive(refs) == 0


@pytest.fixture
def worker_reconciling() -> Iterator[None]:
    """A controller worker in the middle of a reconcile (its ``gc_tuning.reconciling`` entry
    set, as ``kinrun.controller`` sets it), for one test."""
    fake_worker = -1  # no real thread has this ident
    gc_tuning.reconciling[fake_worker] = True
    try:
        yield
    finally:
        del gc_tuning.reconciling[fake_worker]


def test_decoded_volume_makes_a_collection_due_and_collect_if_due_runs_it(
        policy, worker_reconciling) -> None:
    """While a reconcile runs: below YOUNG_COLLECTION_BYTES nothing is due (no collection on
    the decoding thread); at it, the next collect_if_due (the worker, between reconciles)
    runs one young collection and only one."""
    with gc_tuning.GCPauseRecorder() as pauses:
        gc.collect(0)  # the policy's callback starts the count of pending bytes at 0
        gc_tuning.decoded(gc_tuning.YOUNG_COLLECTION_BYTES - 1)
        gc_tuning.collect_if_due()
        before = len(pauses.pauses)
        gc_tuning.decoded(1)
        gc_tuning.collect_if_due()
        gc_tuning.collect_if_due()
    assert len(pauses.pauses) - before == 1 and pauses.pauses[-1][0] == 0


def test_decoded_collects_on_the_decoding_thread_at_twice_the_young_size(
        policy, worker_reconciling) -> None:
    """While a reconcile runs, ``decoded`` collects only once 2 x YOUNG_COLLECTION_BYTES are
    pending with none run by a worker (the fallback that bounds the young generation), and
    the count starts again."""
    with gc_tuning.GCPauseRecorder() as pauses:
        gc.collect(0)  # the policy's callback starts the count of pending bytes at 0
        start = len(pauses.pauses)
        gc_tuning.decoded(2 * gc_tuning.YOUNG_COLLECTION_BYTES - 1)
        assert len(pauses.pauses) == start
        gc_tuning.decoded(1)
        assert len(pauses.pauses) == start + 1 and pauses.pauses[-1][0] == 0
        gc_tuning.decoded(2 * gc_tuning.YOUNG_COLLECTION_BYTES - 1)  # the count started again
        assert len(pauses.pauses) == start + 1


def reconcile_leaving_a_cycle() -> weakref.ref[Node]:
    """What a controller worker does around a reconcile (``kinrun.controller``: the epoch
    counted, ``reconciling`` set then cleared), the reconcile leaving a dead cycle."""
    me = threading.get_ident()
    gc_tuning.reconciling[me] = True
    gc_tuning.epoch += 1
    cycle = short_lived_cycle()
    ref = weakref.ref(cycle)
    del cycle
    gc_tuning.reconciling[me] = False
    return ref


def decoded_event() -> dict:
    return {"metadata": {"name": "p", "labels": {"n": "1"}}, "spec": {"containers": [{}]}}


def test_a_read_collects_what_reconciles_left_then_freezes_what_it_decodes(policy) -> None:
    """``watch_read`` collects the dead cycles of the reconciles that ran since the last
    freeze; each event decoded after it is frozen at once (never walked by a collection)
    while no reconcile starts; a read with no reconcile since the last freeze collects
    nothing."""
    try:
        refs = [reconcile_leaving_a_cycle() for _ in range(3)]
        with gc_tuning.GCPauseRecorder() as pauses:
            since = gc_tuning.watch_read()
            assert since == gc_tuning.epoch and len(pauses.pauses) == 1
            assert alive(refs) == 0  # collected, not frozen
            frozen = gc.get_freeze_count()
            obj = decoded_event()
            gc_tuning.decoded(100, since)
            assert gc.get_freeze_count() >= frozen + 3  # the dicts and the list just made
            again = gc_tuning.watch_read()  # no reconcile since that freeze
            assert again == since and len(pauses.pauses) == 1
        assert obj
    finally:
        gc_tuning.reconciling.pop(threading.get_ident(), None)


def test_a_reconcile_started_during_a_read_stops_its_freezes(policy) -> None:
    """A reconcile that runs between ``watch_read`` and an event's decode (another worker
    took the GIL) may have left cycles: that event is counted by volume, not frozen, and
    the reconcile's dead cycle stays collectable."""
    try:
        since = gc_tuning.watch_read()
        assert since is not None
        ref = reconcile_leaving_a_cycle()
        frozen = gc.get_freeze_count()
        obj = decoded_event()
        gc_tuning.decoded(100, since)
        assert gc.get_freeze_count() == frozen
        gc.collect(0)
        assert ref() is None and obj
    finally:
        gc_tuning.reconciling.pop(threading.get_ident(), None)


def test_a_read_while_a_reconcile_runs_neither_collects_nor_freezes(
        policy, worker_reconciling) -> None:
    """While a worker is inside a reconcile, its cycles may be alive: ``watch_read`` runs no
    collection and returns None, and ``decoded`` then freezes nothing."""
    cycle = short_lived_cycle()  # the running reconcile's, still in use
    ref = weakref.ref(cycle)
    with gc_tuning.GCPauseRecorder() as pauses:
        since = gc_tuning.watch_read()
        gc_tuning.decoded(100, since)
    assert since is None and pauses.pauses == [] and gc.get_freeze_count() == 0
    del cycle  # the reconcile ends
    gc.collect()
    assert ref() is None


def test_without_the_policy_a_read_neither_collects_nor_freezes() -> None:
    """The policy off: ``watch_read`` returns None and nothing is frozen."""
    assert not gc_tuning.freezing_survivors()
    since = gc_tuning.watch_read()
    gc_tuning.decoded(100, since)
    assert since is None and gc.get_freeze_count() == 0


def test_soak_of_reads_and_reconciles_leaks_no_reconcile_cycle(policy) -> None:
    """Reads of a few events between reconciles, as a watch delivers them: every reconcile's
    cycle is dead when the next read collects, so a plain full collection finds none alive
    and nothing else walked the decoded objects."""
    refs: list[weakref.ref[Node]] = []
    cache: dict[int, dict] = {}
    try:
        with gc_tuning.GCPauseRecorder() as pauses:
            for i in range(ROUNDS // 4):
                since = gc_tuning.watch_read()
                for j in range(4):
                    cache[(4 * i + j) % 100] = decoded_event()
                    gc_tuning.decoded(6_000, since)
                refs.append(reconcile_leaving_a_cycle())
        # one per read after a reconcile (and the first, if one ran before this test)
        assert ROUNDS // 4 - 1 <= len(pauses.pauses) <= ROUNDS // 4
        gc.collect()
        assert alive(refs) == 0
    finally:
        gc_tuning.reconciling.pop(threading.get_ident(), None)

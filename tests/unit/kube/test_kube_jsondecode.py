"""jsondecode.loads: decodes like orjson and restores the collector's state afterwards."""

from __future__ import annotations

import gc
import threading

import orjson
import pytest

from kinrun.gc import pause as gc_pause
from kinrun.kube import jsondecode
from kinrun.kube.jsondecode import loads


def test_loads_decodes_like_orjson() -> None:
    """The result equals orjson's."""
    data = orjson.dumps({"a": [1, {"b": None}], "c": "é"})
    assert loads(data) == orjson.loads(data)


def test_collector_is_enabled_again_after_a_decode() -> None:
    """An enabled collector is enabled after loads, also when decoding fails."""
    assert gc.isenabled()
    loads(b"[1]")
    assert gc.isenabled()
    with pytest.raises(orjson.JSONDecodeError):
        loads(b"{nope")
    assert gc.isenabled()


def test_collector_disabled_by_the_program_stays_disabled() -> None:
    """loads never turns on a collector the program turned off."""
    gc.disable()
    try:
        loads(b"{}")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_no_collection_runs_inside_a_decode() -> None:
    """Decoding many containers triggers no GC collection while the decode runs (one may run
    right after it); plain orjson.loads does trigger them."""
    data = orjson.dumps([{"i": i, "l": [i]} for i in range(20_000)])
    during: list[bool] = []  # per collection: was a decode running?

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            during.append(gc_pause._active > 0)

    old = gc.get_threshold()
    gc.set_threshold(50)
    gc.callbacks.append(on_gc)
    try:
        with jsondecode.gc_paused():
            pass
        during.clear()
        orjson.loads(data)
        plain = len(during)
        during.clear()
        loads(data)
        inside = [d for d in during if d]
    finally:
        gc.callbacks.remove(on_gc)
        gc.set_threshold(*old)
    assert plain > 0
    assert inside == []


def test_collector_is_enabled_after_concurrent_decodes() -> None:
    """Overlapping decodes on several threads leave the collector enabled at the end."""
    done: list[bool] = []
    barrier = threading.Barrier(4)

    def decode_many() -> None:
        barrier.wait(timeout=5)
        for _ in range(200):
            loads(b'{"k": [1, 2, 3]}')
        done.append(True)

    threads = [threading.Thread(target=decode_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert done == [True] * 4
    assert gc.isenabled()


def test_only_a_freezing_pause_freezes_under_the_gc_policy():
    """With gc_tuning's policy active, a pause entered with freeze=True (a LIST) freezes what
    was decoded at its end; a plain pause (one request) does not; without the policy, neither."""
    import gc

    from kinrun.gc import policy as gc_tuning
    from kinrun.kube.jsondecode import gc_paused, loads

    before = gc_tuning.manage()
    try:
        with gc_paused():
            kept = [loads(b'{"a": [1, {"b": [2]}]}') for _ in range(100)]
        assert gc.get_freeze_count() == 0
        with gc_paused(freeze=True):
            with gc_paused():  # nested plain pauses inside a LIST still end in the freeze
                decoded = [loads(b'{"a": [1, {"b": [2]}]}') for _ in range(100)]
        assert gc.get_freeze_count() >= 3 * len(decoded)
    finally:
        gc_tuning.unfreeze(before)
    with gc_paused(freeze=True):
        loads(b"[[1]]")
    assert gc.get_freeze_count() == 0
    assert kept


def test_cyclic_garbage_from_other_code_is_not_frozen_by_a_plain_decode():
    """A reference cycle that died before a request's decode stays collectable."""
    import gc

    from kinrun.gc import policy as gc_tuning
    from kinrun.kube.jsondecode import loads

    before = gc_tuning.manage()
    try:
        cycle: dict = {}
        cycle["self"] = cycle
        del cycle
        loads(b'{"kind": "Status"}')
        assert gc.get_freeze_count() == 0
        assert gc.collect(0) >= 1
    finally:
        gc_tuning.unfreeze(before)

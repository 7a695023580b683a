"""Property: whatever the server does (creates, updates, deletes, dropped watches, 410s,
relists, stalls, compaction), once the stream settles the cache equals the server, every key's
handler history is consistent, and every changed key was last reconciled in its final state."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_fakes import pod

from kinrun.cache import DeletedFinalStateUnknown, SharedIndexInformer, strip_managed_fields
from kinrun.controller import Controller, enqueue_own_key
from kinrun.testing.memory import MemoryListerWatcher
from kinrun.workqueue import RateLimitingQueue

SETTLE = 10.0  # seconds, bound on waiting for the pipeline to catch up

names = st.integers(0, 4).map(lambda i: f"p{i}")
server_ops = st.one_of(
    st.tuples(st.sampled_from(["create", "update", "delete"]), names),
    st.tuples(st.sampled_from(["close", "error410", "watch410", "list410", "stall", "compact",
                               "bookmark"]), st.none()),
)


class Monitor:
    """Checks each key's handler history as it happens and records reconciles."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.view: dict[str, str] = {}  # key -> uid as the handler history implies
        self.deleted_uids: set[str] = set()
        self.violations: list[str] = []
        self.reconciled: dict[str, str | None] = {}  # key -> rv seen by its last reconcile

    def _changed(self) -> None:
        self.cond.notify_all()

    def on_add(self, obj, is_in_initial_list):
        with self.cond:
            key, uid = f"default/{obj['metadata']['name']}", obj["metadata"]["uid"]
            if key in self.view:
                self.violations.append(f"add of {key} while present")
            if uid in self.deleted_uids:
                self.violations.append(f"add of {key} uid {uid} after its delete")
            self.view[key] = uid
            self._changed()

    def on_update(self, old, new):
        with self.cond:
            key = f"default/{new['metadata']['name']}"
            if self.view.get(key) != old["metadata"]["uid"]:
                self.violations.append(f"update of {key} before its add")
            self.view[key] = new["metadata"]["uid"]
            self._changed()

    def on_delete(self, obj):
        with self.cond:
            if isinstance(obj, DeletedFinalStateUnknown):
                key = obj.key
            else:
                key = f"default/{obj['metadata']['name']}"
            uid = self.view.pop(key, None)
            if uid is None:
                self.violations.append(f"delete of {key} never added")
            else:
                self.deleted_uids.add(uid)
            self._changed()

    def reconcile(self, key, obj):
        with self.cond:
            self.reconciled[key] = obj["metadata"]["resourceVersion"] if obj else None
            self._changed()


def apply(server: MemoryListerWatcher, op: str, name: str | None, counter: list[int]) -> str | None:
    key = f"default/{name}"
    if op in ("create", "update"):
        counter[0] += 1
        obj = pod(name, spec={"n": counter[0]}, meta={"managedFields": [{"m": counter[0]}]})
        if server.get(key) is None:
            server.create(obj)
        else:
            server.update(obj)
        return key
    if op == "delete":
        if server.get(key) is not None:
            server.delete(key)
            return key
        return None
    if op == "close":
        server.close_watches()
    elif op == "error410":
        server.expire_next_watch_event()
        server.close_watches()
    elif op == "watch410":
        server.expire_next_watch()
        server.close_watches()
    elif op == "list410":
        server.expire_next_list()
    elif op == "stall":
        server.stall_next_watch()
        server.close_watches()
    elif op == "compact":
        server.compact()
    elif op == "bookmark":
        server.bookmark()
    return None


def settled(server, informer, monitor, changed) -> bool:
    state = {k: o["metadata"]["resourceVersion"] for k, o in server.objects().items()}
    cached = {k: informer.lister.get(k)["metadata"]["resourceVersion"] for k in informer.indexer.list_keys()}
    if cached != state or set(monitor.view) != set(state):
        return False
    for key in changed:
        if key in state and monitor.reconciled.get(key) != state[key]:
            return False
        if key not in state and monitor.reconciled.get(key, None) is not None:
            return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.sets(names, max_size=3), ops=st.lists(server_ops, max_size=25),
       history=st.sampled_from([3, 1000]))
def test_pipeline_converges_to_server_state(initial, ops, history):
    """After random server changes and faults, cache == server, histories are consistent, and
    every changed key was reconciled in its final state."""
    server = MemoryListerWatcher(history_size=history)
    for name in sorted(initial):
        server.create(pod(name))
    monitor = Monitor()
    informer = SharedIndexInformer(server, kind="Pod", transform=strip_managed_fields,
                                   reflector_options={"inactivity_timeout": 0.3})  # the watchdog ends stalls
    queue = RateLimitingQueue()
    controller = Controller("prop", queue, informer.lister.get, monitor.reconcile, workers=2)
    informer.add_event_handler(monitor)
    informer.add_event_handler(enqueue_own_key(controller.enqueue))
    informer.start()
    controller.start()
    try:
        assert informer.wait_for_sync(SETTLE)
        changed: set[str] = {f"default/{n}" for n in initial}
        counter = [0]
        for op, name in ops:
            key = apply(server, op, name, counter)
            if key:
                changed.add(key)
        server.close_watches()  # ends a stalled watch, if the last fault left one
        with monitor.cond:
            ok = monitor.cond.wait_for(lambda: settled(server, informer, monitor, changed), SETTLE)
        assert monitor.violations == []
        assert ok, (server.objects().keys(), informer.indexer.list_keys(), monitor.reconciled)
        assert all("managedFields" not in o["metadata"] for o in informer.lister.list())
    finally:
        controller.stop(SETTLE)
        informer.stop()

"""Hot reload applied to a running Manager (kinrun.reload.Reloader) against the embedded API
server: kept informers are not relisted, swapped controllers take over their workqueue, an
invalid config changes nothing, a gained index is built from the cache, and under a writer
no key is lost or reconciled by two definitions at once."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinrun.config import load
from kinrun.kube import Client
from kinrun.metrics import Metrics
from kinrun.plan import plan
from kinrun.reload import Reloader

WAIT = 30.0

CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - name: a
    for: cms
    workers: 2
    reconcile:
      actions:
        - log: "a VERSION {{ obj.metadata.name }}"
  - name: b
    for: cms
    reconcile:
      actions:
        - log: "b {{ obj.metadata.name }}"
"""

SECRETS = """
  secrets: {apiVersion: v1, kind: Secret, namespaces: [default]}
"""
CONTROLLER_C = """
  - name: c
    for: secrets
    reconcile:
      actions:
        - log: "c {{ obj.metadata.name }}"
"""


def config(version: str, *, secrets: bool = False, index: bool = False) -> str:
    text = CONFIG.replace("VERSION", version)
    if index:
        text = text.replace("namespaces: [default]}",
                            'namespaces: [default], indexers: {byApp: "{{ obj.metadata.labels.app'
                            ' }}"}}', 1)
    if secrets:
        text = text.replace("informers:\n", "informers:" + SECRETS, 1) + CONTROLLER_C
    return text


def _n(version: str) -> int:
    return int(version.lstrip("v"))


class Calls:
    """Every reconcile as (version, controller, key, resourceVersion), through the wrap seam;
    fails the test when one key runs under two reconciles at once."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.calls: list[tuple[str, str, str, str]] = []
        self.running: Counter[tuple[str, str]] = Counter()
        self.overlaps: list[tuple[str, str]] = []
        self.stale: list[tuple[str, str, str]] = []  # started under a replaced version
        self.current: dict[str, str] = {}  # controller -> newest version started
        self.by_version: Counter[tuple[str, str]] = Counter()  # reconciles running now

    def wrap_for(self, version: str):
        def wrap(controller, reconcile):
            def observed(key, obj, *args):
                with self.lock:
                    if self.running[(controller, key)]:
                        self.overlaps.append((controller, key))
                    self.running[(controller, key)] += 1
                    # the barrier: none starts under a definition older than one that started,
                    # and none of a newer one while an older one still runs
                    newest = self.current.get(controller, version)
                    older_running = any(n for (c, v), n in self.by_version.items()
                                        if c == controller and _n(v) < _n(version))
                    if _n(version) < _n(newest) or older_running:
                        self.stale.append((version, controller, key))
                    self.current[controller] = max(newest, version, key=_n)
                    self.by_version[(controller, version)] += 1
                try:
                    return reconcile(key, obj, *args)
                finally:
                    with self.lock:
                        self.running[(controller, key)] -= 1
                        self.by_version[(controller, version)] -= 1
                        rv = (obj or {}).get("metadata", {}).get("resourceVersion", "")
                        self.calls.append((version, controller, key, rv))
                        self.lock.notify_all()
            return observed
        return wrap

    def wait_for(self, predicate, timeout: float = WAIT) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: predicate(self.calls), timeout)


class CountingClient:
    """The client with every LIST counted per resource (``lists``)."""

    def __init__(self, client: Client) -> None:
        self.client, self.lists = client, Counter()
        original = client.lister_watcher

        def lister_watcher(ref, **kw):
            lw = original(ref, **kw)
            inner = lw.list

            def counted(*a, **k):
                self.lists[ref.resource] += 1
                return inner(*a, **k)
            lw.list = counted
            return lw
        client.lister_watcher = lister_watcher


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def version_of(bound) -> str:
    text = bound.plan.controller("a").spec.reconcile.actions[0].raw["log"]
    return text.split()[1]


def start(path: Path, client: Client, calls: Calls, metrics: Metrics | None = None):
    compiled = plan(load(path))
    bound = compiled.bind(client, wait_for_kinds=True)
    manager = bound.manager(metrics=metrics, wrap=calls.wrap_for(version_of(bound)))
    assert manager.start(sync_timeout=WAIT)
    reloader = Reloader(manager, lambda: load(path), plan, metrics=metrics,
                        wrap_for=lambda b: calls.wrap_for(version_of(b)),
                        files=lambda: [str(path)], drain_timeout=WAIT)
    return manager, reloader


def cm(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels}, "data": {}}


def test_reload_keeps_the_informer_swaps_one_controller_and_adds_another(
        client: Client, tmp_path: Path) -> None:
    counting = CountingClient(client)
    for i in range(5):
        client.create(cm(f"c{i}"))
    client.create({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s0", "namespace": "default"}})
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    try:
        # both controllers have reconciled the initial list (b runs beside a: reading its
        # count before it finished would race with its own start-up)
        assert calls.wait_for(lambda c: all(sum(1 for x in c if x[1] == name) >= 5
                                            for name in ("a", "b")))
        informer, b = manager.informers["cms"], manager.controllers["b"]
        a_queue = manager.controllers["a"].queue
        b_calls = sum(1 for x in calls.calls if x[1] == "b")
        path.write_text(config("v2", secrets=True))
        assert reloader.reload()
        assert reloader.last_diff.controllers_swapped == ("a",)
        assert reloader.last_diff.controllers_added == ("c",)
        assert reloader.last_diff.controllers_unchanged == ("b",)
        # every object is reconciled again by the new definition of a; c runs
        assert calls.wait_for(lambda c: {x[2] for x in c if x[:2] == ("v2", "a")}
                              == {f"default/c{i}" for i in range(5)})
        assert calls.wait_for(lambda c: ("v2", "c", "default/s0") in {x[:3] for x in c})
        assert manager.informers["cms"] is informer  # cache kept
        assert manager.controllers["a"].queue is a_queue  # the same workqueue
        assert manager.controllers["b"] is b
        assert counting.lists == {"configmaps": 1, "secrets": 1}  # no relist of configmaps
        assert sum(1 for x in calls.calls if x[1] == "b") == b_calls  # b untouched
        assert not calls.overlaps and not calls.stale
        # and back: c and the secrets informer go away
        path.write_text(config("v3"))
        assert reloader.reload()
        assert reloader.last_diff.controllers_removed == ("c",)
        assert reloader.last_diff.informers_removed == ("secrets",)
        assert "c" not in manager.controllers and "secrets" not in manager.informers
        assert len(manager.factory.informers()) == 1
        client.create(cm("late"))
        assert calls.wait_for(lambda c: ("v3", "a", "default/late") in {x[:3] for x in c})
        assert counting.lists["configmaps"] == 1
        assert not calls.overlaps and not calls.stale
    finally:
        manager.stop(2.0)


def test_invalid_config_changes_nothing_and_is_logged_once(
        client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls, metrics = Calls(), Metrics()
    manager, reloader = start(path, client, calls, metrics)
    from kinrun.probes import Probes

    probes = Probes(stuck_reconcile_after=60)
    probes.watch_informers(lambda: manager.factory.informers().values())
    probes.watch_waiting(manager.waiting_informers)
    try:
        before = dict(manager.controllers)
        assert probes.readyz() == (True, "ok\n")
        path.write_text(config("v2").replace("for: cms", "for: nothing", 1))
        with caplog.at_level(logging.ERROR, logger="kinrun.reload"):
            assert not reloader.reload()
            assert not reloader.reload()  # the same bytes: not logged again
        errors = [r for r in caplog.records if "reload" in r.getMessage()]
        assert len(errors) == 1
        assert f"{path}:" in errors[0].getMessage()  # file:line of the bad key
        assert manager.controllers == before
        assert probes.readyz() == (True, "ok\n")  # a rejected config does not unready kinrun
        assert metrics.registry.get_sample_value("kinrun_config_last_reload_successful") == 0
        assert metrics.registry.get_sample_value(
            "kinrun_config_reloads_total", {"result": "failure"}) == 2
        rejected = reloader_hash(path)
        assert metrics.registry.get_sample_value(
            "kinrun_config_info", {"hash": rejected, "state": "rejected"}) == 1
        path.write_text(config("v2"))
        assert reloader.reload()
        assert metrics.registry.get_sample_value("kinrun_config_last_reload_successful") == 1
        assert metrics.registry.get_sample_value(
            "kinrun_config_info", {"hash": reloader.hash, "state": "active"}) == 1
        assert metrics.registry.get_sample_value(
            "kinrun_config_info", {"hash": rejected, "state": "rejected"}) is None
    finally:
        manager.stop(2.0)


def reloader_hash(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_gained_index_is_built_from_the_cache_without_a_list(
        client: Client, tmp_path: Path) -> None:
    counting = CountingClient(client)
    client.create(cm("one", app="web"))
    client.create(cm("two", app="db"))
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    try:
        path.write_text(config("v1", index=True))
        assert reloader.reload()
        assert reloader.last_diff.indexes == {"cms": (("byApp",), (), ())}
        lister = manager.informers["cms"].lister
        assert lister.index_keys("byApp", "web") == ["default/one"]
        assert counting.lists == {"configmaps": 1}
        path.write_text(config("v1"))
        assert reloader.reload()
        with pytest.raises(KeyError):
            manager.informers["cms"].lister.index_keys("byApp", "web")
    finally:
        manager.stop(2.0)


def test_a_reload_reading_new_fields_relists_that_informer_once(
        client: Client, tmp_path: Path) -> None:
    """Projection: v1 reads only names, so the cache holds no data; a config whose template
    reads data relists the informer once (the summary names it), and the cache then holds
    the data the new template reads."""
    counting = CountingClient(client)
    client.create({**cm("one"), "data": {"k": "v"}})
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    manager, reloader = start(path, client, Calls())
    try:
        assert "data" not in manager.informers["cms"].lister.get("default/one")
        path.write_text(config("v1").replace("{{ obj.metadata.name }}\"\n  - name: b",
                                             "{{ obj.metadata.name }} {{ obj.data.k }}\"\n"
                                             "  - name: b", 1))
        assert reloader.reload()
        assert reloader.last_diff.relisted == {"cms": "+data.k"}
        assert "relisted for the fields read: cms +data.k" in reloader.last_diff.summary()
        assert counting.lists == {"configmaps": 2}  # the start's LIST and the new informer's
        assert manager.informers["cms"].lister.get("default/one")["data"] == {"k": "v"}
    finally:
        manager.stop(2.0)


def test_under_a_writer_no_key_is_lost_or_reconciled_by_two_definitions(
        client: Client, tmp_path: Path) -> None:
    """A writer updates 20 ConfigMaps continuously while the config is replaced 4 times; the
    last version of every object is reconciled by the final definition, no reconcile starts
    under a replaced one and no key runs twice at once."""
    names = [f"w{i}" for i in range(20)]
    for name in names:
        client.create(cm(name))
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    stop, last = threading.Event(), {}

    def writer() -> None:
        n = 0
        while not stop.is_set():
            name = names[n % len(names)]
            obj = client.patch("v1", "ConfigMap", name, {"data": {"n": str(n)}},
                               namespace="default")
            last[f"default/{name}"] = obj["metadata"]["resourceVersion"]
            n += 1
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for version in ("v2", "v3", "v4", "v5"):
            seen = len(calls.calls)
            assert calls.wait_for(lambda c, seen=seen: len(c) > seen + 40)
            path.write_text(config(version, secrets=version in ("v3", "v4")))
            assert reloader.reload()
        stop.set()
        thread.join(WAIT)
        final = dict(last)
        assert calls.wait_for(lambda c: all(
            any(x[0] == "v5" and x[1] == "a" and x[2] == key and int(x[3]) >= int(rv)
                for x in c) for key, rv in final.items()))
        assert not calls.overlaps
        assert not calls.stale
    finally:
        stop.set()
        manager.stop(2.0)


def test_a_swap_waits_for_the_reconcile_under_way(client: Client, tmp_path: Path) -> None:
    """The old definition's reconcile under way finishes before any of the new one starts,
    and the key queued meanwhile runs under the new one."""
    client.create(cm("gate"))
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    entered, release = threading.Event(), threading.Event()
    gated = calls.wrap_for

    def wrap_for(version):
        outer = gated(version)

        def wrap(controller, reconcile):
            def gate(key, obj, *args):
                if version == "v1" and controller == "a" and key == "default/gate" \
                        and (((obj or {}).get("metadata") or {}).get("labels") or {}).get("gate"):
                    entered.set()
                    release.wait(WAIT)
                return reconcile(key, obj, *args)
            return outer(controller, gate)
        return wrap
    calls.wrap_for = wrap_for
    manager, reloader = start(path, client, calls)
    try:
        # a label: the config reads no data, so its cache holds none (projection)
        client.patch("v1", "ConfigMap", "gate", {"metadata": {"labels": {"gate": "1"}}},
                     namespace="default")
        assert entered.wait(WAIT)
        path.write_text(config("v2"))
        done = []
        reloading = threading.Thread(target=lambda: done.append(reloader.reload()))
        reloading.start()
        reloading.join(0.5)
        assert reloading.is_alive()  # held at the barrier by the v1 reconcile
        client.patch("v1", "ConfigMap", "gate", {"data": {"x": "2"}}, namespace="default")
        release.set()
        reloading.join(WAIT)
        assert done == [True]
        assert calls.wait_for(lambda c: any(x[:3] == ("v2", "a", "default/gate")
                                            and x[3] for x in c))
        assert not calls.overlaps and not calls.stale
    finally:
        release.set()
        manager.stop(2.0)


PLUGIN_CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
plugins: [./hooks.py]
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - name: a
    for: cms
    reconcile:
      hooks: true
      actions:
        - log: "a v1 {{ obj.metadata.name }}"
"""

PLUGIN = """
from kinrun.hooks import hookimpl
VERSION = "{version}"
SEEN = []

@hookimpl
def kinrun_reconcile(controller, key, obj, ctx):
    SEEN.append((VERSION, key))
"""


def test_a_changed_plugin_file_is_imported_again_and_swaps_every_controller(
        client: Client, tmp_path: Path) -> None:
    import sys

    from kinrun.plugin_manager import file_module_name

    client.create(cm("p1"))
    path, hooks = tmp_path / "kinrun.yaml", tmp_path / "hooks.py"
    path.write_text(PLUGIN_CONFIG)
    hooks.write_text(PLUGIN.format(version="one"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    try:
        module = sys.modules[file_module_name(hooks.resolve())]
        assert calls.wait_for(lambda c: any(x[2] == "default/p1" for x in c))
        assert ("one", "default/p1") in module.SEEN
        reloader._files = lambda: [str(path), str(hooks)]
        hooks.write_text(PLUGIN.format(version="two"))
        assert reloader.reload()
        assert reloader.last_diff.plugins_changed
        assert reloader.last_diff.controllers_swapped == ("a",)
        fresh = sys.modules[file_module_name(hooks.resolve())]
        assert fresh is not module and fresh.VERSION == "two"
        client.patch("v1", "ConfigMap", "p1", {"data": {"x": "1"}}, namespace="default")
        assert calls.wait_for(lambda c: ("two", "default/p1") in fresh.SEEN)
        count = len(module.SEEN)
        client.patch("v1", "ConfigMap", "p1", {"data": {"x": "2"}}, namespace="default")
        assert calls.wait_for(lambda c: len(fresh.SEEN) >= 2)
        assert len(module.SEEN) == count  # the old version is called no more
    finally:
        manager.stop(2.0)


def test_an_unknown_kind_waits_only_outside_the_built_in_groups(client: Client) -> None:
    from kinrun.config import load_text
    from kinrun.kube.discovery import UnknownKindError

    text = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  foos: {apiVersion: example.kinrun.dev/v1, kind: Foo}
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - {name: f, for: foos, watches: [{informer: cms, mapTo: owner}], reconcile: {actions: [{log: x}]}}
  - {name: c, for: cms, reconcile: {actions: [{log: x}]}}
"""
    compiled = plan(load_text(text, file="kinrun.yaml"))
    with pytest.raises(UnknownKindError):
        compiled.bind(client)  # library default: an error, as before
    bound = compiled.bind(client, wait_for_kinds=True)
    assert list(bound.waiting) == ["foos"]
    assert "kinrun.yaml:" in bound.waiting["foos"]
    assert bound.waiting_controllers() == {"f": ["foos"]}
    metrics = Metrics()
    manager = bound.manager(metrics=metrics)
    assert sorted(manager.controllers) == ["c"] and sorted(manager.informers) == ["cms"]
    assert manager.waiting_informers() == bound.waiting
    Reloader(manager, lambda: None, plan, metrics=metrics)
    assert metrics.registry.get_sample_value("kinrun_informer_waiting",
                                             {"informer": "foos"}) == 1
    assert metrics.registry.get_sample_value("kinrun_informer_waiting",
                                             {"informer": "cms"}) == 0
    from kinrun.errors import ConfigError

    with pytest.raises(ConfigError, match="ConfigMapz"):  # a built-in group: a typo, refused
        plan(load_text(text.replace("kind: ConfigMap", "kind: ConfigMapz"),  # at compile time
                       file="kinrun.yaml"))


def test_a_reload_that_fails_while_applying_is_undone(client: Client, tmp_path: Path,
                                                    embedded_server) -> None:
    """An informer the reload adds that does not sync within ``sync_timeout`` (its LIST is
    slow) undoes the whole reload: that informer is stopped again, no controller was swapped
    or added; the same file applies once the server answers in time (SIGHUP's forced
    reload)."""
    client.create(cm("one", app="web"))
    client.create({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s0", "namespace": "default"}})
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    try:
        before = dict(manager.controllers)
        keys = set(manager.factory.informers())
        reloader.sync_timeout = 0.3
        embedded_server.faults.latency = 1.5  # every request from now on: the new LIST too
        path.write_text(config("v2", secrets=True))
        assert not reloader.reload()
        embedded_server.faults.latency = 0.0
        assert manager.controllers == before and set(manager.factory.informers()) == keys
        client.patch("v1", "ConfigMap", "one", {"data": {"x": "1"}}, namespace="default")
        assert calls.wait_for(lambda c: any(x[:3] == ("v1", "a", "default/one") and x[3]
                                            for x in c))
        assert not any(x[0] == "v2" for x in calls.calls)
        reloader.sync_timeout = WAIT
        assert reloader.reload("SIGHUP", force=True)
        assert calls.wait_for(lambda c: ("v2", "c", "default/s0") in {x[:3] for x in c})
    finally:
        manager.stop(2.0)


def test_a_rejected_reload_logs_one_record_per_error_line(
        client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The text log format keeps each record on one line (newlines escaped), so each error of
    a rejected config is a record of its own, file:line:column first (issue 15 trial)."""
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    manager, reloader = start(path, client, Calls())
    try:
        path.write_text(config("v2").replace("workers: 2", "workerz: 2\n    rateLimiterz: {}"))
        with caplog.at_level(logging.ERROR, logger="kinrun.reload"):
            assert not reloader.reload()
        messages = [r.getMessage() for r in caplog.records if r.name == "kinrun.reload"]
        assert not any("\n" in m for m in messages)
        assert "still running the previous config" in messages[0]
        assert any(f"{path}:9:5: controllers[0].workerz" in m for m in messages[1:])
        assert any(f"{path}:10:5: controllers[0].rateLimiterz" in m for m in messages[1:])
    finally:
        manager.stop(2.0)


@pytest.mark.parametrize("edit, where, message", [
    pytest.param(lambda text: text.replace("    workers: 2\n", "    workers: 2\n"
                                           "    schedule: '0 0 30 2 *'\n"),
                 ":10:15: controllers[0].schedule: ", "never fires: no Feb 30",
                 id="schedule-never-fires"),
    pytest.param(lambda text: text + "plugins: [./broken.py]\n", ":18:11: plugins[0]: ",
                 "failed to import", id="plugin-import"),
])
def test_a_rejected_reload_names_file_line_and_key(
        client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture, edit, where: str,
        message: str) -> None:
    """A reload refused for a schedule that never fires (it used to crash past the point of no
    return with croniter's bare "failed to find next date") or a plugin that fails to import
    logs file:line:column: key as validate does; the running controllers and schedules stay."""
    (tmp_path / "broken.py").write_text("def broken(:\n")
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    manager, reloader = start(path, client, Calls())
    try:
        before = (dict(manager.controllers), dict(manager.schedules))
        path.write_text(edit(config("v2")))
        with caplog.at_level(logging.ERROR, logger="kinrun"):
            assert not reloader.reload()
        [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert f"still running the previous config (hash {reloader.hash[:12]}): {path}{where}" \
            in record.getMessage(), record.getMessage()
        assert message in record.getMessage()
        assert (manager.controllers, manager.schedules) == before
    finally:
        manager.stop(2.0)


def test_a_reload_interrupted_by_the_stop_is_abandoned_not_an_error(
        client: Client, tmp_path: Path, embedded_server, caplog: pytest.LogCaptureFixture) -> None:
    """SIGTERM while a reload waits for a new informer's sync: logged at info as abandoned
    because kinrun is stopping, not an ERROR saying the previous config still runs."""
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    try:
        before = dict(manager.controllers)
        reloader._stop.set()  # the run's stop Event (Reloader(stop=...)), set by SIGTERM
        embedded_server.faults.latency = 1.5  # the new LIST cannot finish at once
        path.write_text(config("v2", secrets=True))
        with caplog.at_level(logging.INFO, logger="kinrun.reload"):
            assert not reloader.reload("SIGHUP", force=True)
        embedded_server.faults.latency = 0.0
        records = [r for r in caplog.records if r.name == "kinrun.reload"]
        assert not [r for r in records if r.levelno >= logging.WARNING]
        assert any(r.levelno == logging.INFO and "abandoned: kinrun is stopping"
                   in r.getMessage() for r in records)
        assert reloader.reloads["failure"] == 0
        assert manager.controllers == before
    finally:
        embedded_server.faults.latency = 0.0
        manager.stop(2.0)


EVENTS = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - name: a
    for: cms
    events: {component: notes-controller}
    reconcile:
      actions:
        - log: "a VERSION {{ obj.metadata.name }}"
        - event: {reason: Seen, message: "saw {{ obj.metadata.name }}"}
"""


def test_a_swapped_controller_keeps_counting_its_events(
        client: Client, tmp_path: Path, embedded_api_client) -> None:
    """The swapped controller's identical event patches the Event recorded before the reload
    (count 2), as only a restart starts new Events: the EventCorrelator is handed on, through
    a reload that left the controller unchanged too."""
    import kubernetes

    client.create(cm("web"))
    path = tmp_path / "kinrun.yaml"
    path.write_text(EVENTS.replace("VERSION", "v1"))
    calls = Calls()
    manager, reloader = start(path, client, calls)
    core = kubernetes.client.CoreV1Api(embedded_api_client)
    try:
        assert calls.wait_for(lambda c: ("v1", "a", "default/web") in {x[:3] for x in c})
        assert [e.count for e in core.list_namespaced_event("default").items] == [1]
        assert reloader.reload("SIGHUP", force=True)  # unchanged: the next Plan's recorder
        assert reloader.last_diff.controllers_unchanged == ("a",)  # shares the correlator
        path.write_text(EVENTS.replace("VERSION", "v2"))
        assert reloader.reload()
        assert reloader.last_diff.controllers_swapped == ("a",)
        assert calls.wait_for(lambda c: ("v2", "a", "default/web") in {x[:3] for x in c})
        events = core.list_namespaced_event("default").items
        assert [(e.count, e.message) for e in events] == [(2, "saw web")]
    finally:
        manager.stop(2.0)


def test_an_informer_added_for_a_kind_not_served_yet_says_it_waits(
        client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A reload that adds an informer whose CRD is not installed logs the same waits line as
    a start, and its controller is in the summary as added, waiting (issue 15 trial)."""
    path = tmp_path / "kinrun.yaml"
    path.write_text(config("v1"))
    manager, reloader = start(path, client, Calls())
    try:
        path.write_text(config("v1").replace(
            "controllers:\n", "  foos: {apiVersion: example.kinrun.dev/v1, kind: Foo}\n"
            "controllers:\n  - {name: g, for: foos, reconcile: {actions: [{log: x}]}}\n"))
        with caplog.at_level(logging.INFO, logger="kinrun.reload"):
            assert reloader.reload()
        messages = [r.getMessage() for r in caplog.records if r.name == "kinrun.reload"]
        assert any(m.startswith("informer foos waits: its kind is not served yet (")
                   and m.endswith("controllers g start when discovery finds it")
                   for m in messages), messages
        assert "controllers added g (waiting for foos) removed -" in reloader.last_diff.summary()
        assert reloader.last_diff.controllers_added == () and "g" not in manager.controllers
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="kinrun.reload"):
            assert reloader.reload("SIGHUP", force=True)  # still waiting: nothing new to say
        assert not any("waits" in r.getMessage() for r in caplog.records)
        assert "controllers added - removed" in reloader.last_diff.summary()
    finally:
        manager.stop(2.0)

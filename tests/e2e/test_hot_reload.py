"""Hot reload end to end on a real kube-apiserver (envtest): ``kinrun CONFIG`` keeps running
while a writer changes objects and the config file is replaced several times (a changed action,
an added informer and controller, their removal, an invalid config, a fix), by an editor's
rename or by a ConfigMap volume's ``..data`` symlink swap. Afterwards: each object's last
version was reconciled by the final definition; no reconcile started under a definition that
a newer one had replaced (nor while an older one still ran); no key ran twice at once; the
ConfigMap informer never relisted (the API server's own ``apiserver_request_total``); kinrun
never restarted. And a kind whose CRD is installed after start: the informer waits (not
ready), then starts and reconciles; the CRD deleted, it stops."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from kinrun.errors import ConflictError
from kinrun.testing.configmap_volume import write_configmap_volume
from tests.e2e.conftest import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.envtest]

BASE = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
reload: {pollInterval: 100ms, discoveryInterval: 1s}
informers:
  cms: {apiVersion: v1, kind: ConfigMap, labelSelector: app=reload}
SECRETS
controllers:
  - name: a
    for: cms
    workers: 3
    reconcile:
      actions:
        - log: "begin VERSION {{ key }} {{ obj.metadata.resourceVersion }}"
        - log: "end VERSION {{ key }}"
CONTROLLER_C
"""
SECRETS = "  secrets: {apiVersion: v1, kind: Secret}\n"
CONTROLLER_C = """\
  - name: c
    for: secrets
    reconcile:
      actions: [{log: "c VERSION {{ key }}"}]
"""


def config(version: int, *, extra: bool = False, invalid: bool = False) -> str:
    text = BASE.replace("VERSION", f"v{version}")
    text = text.replace("SECRETS\n", SECRETS if extra else "")
    text = text.replace("CONTROLLER_C\n", CONTROLLER_C.replace("VERSION", f"v{version}")
                        if extra else "")
    if invalid:
        text = text.replace("workers: 3", "workerz: 3")
    return text


@pytest.fixture
def envtest_cluster(request, tmp_path) -> Cluster:
    cluster = Cluster("envtest", tmp_path, request)
    yield cluster
    cluster.close()


def lists_of(server, resource: str) -> int:
    """LIST requests the API server answered for ``resource`` so far (its /metrics)."""
    text = server._http_get(f"{server.url}/metrics", server.token).decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'verb="LIST"' in line \
                and f'resource="{resource}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def check_versions(log: list[str]) -> dict[str, list[tuple[int, int]]]:
    """Walk kinrun's log: per key the (version, resourceVersion) of each reconcile; asserts
    that no key runs twice at once, no reconcile starts under an older definition than one
    that started, and none of a newer one while an older one runs."""
    rx = re.compile(r"\b(begin|end) v(\d+) (\S+)(?: (\d+))?")
    open_: dict[str, int] = {}
    newest = 0
    seen: dict[str, list[tuple[int, int]]] = {}
    for line in log:
        m = rx.search(line)
        if not m:
            continue
        what, version, key, rv = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if what == "begin":
            assert key not in open_, f"{key} reconciled twice at once: {line}"
            assert version >= newest, f"started under replaced v{version}: {line}"
            assert all(v >= version for v in open_.values()), \
                f"v{version} started while an older one ran: {line}"
            newest = version
            open_[key] = version
            seen.setdefault(key, []).append((version, int(rv)))
        else:
            assert open_.pop(key, None) == version, line
    return seen


class Writer:
    """Patches the ConfigMaps round robin until stopped; ``last`` key -> its last RV."""

    def __init__(self, cluster: Cluster, names: list[str]) -> None:
        self.cluster, self.names = cluster, names
        self.last: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            name = self.names[n % len(self.names)]
            try:
                obj = self.cluster.client.patch("v1", "ConfigMap", name, {"data": {"n": str(n)}},
                                                namespace=self.cluster.namespace)
            except ConflictError:
                continue
            self.last[f"{self.cluster.namespace}/{name}"] = int(obj["metadata"]["resourceVersion"])
            n += 1


def replace_file(path: Path, text: str, how: str) -> None:
    if how == "configmap":
        write_configmap_volume(path.parent, {path.name: text})
    else:  # an editor: write a temporary file, rename it over the config
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


@pytest.mark.parametrize("how", ["rename", "configmap"])
def test_config_replaced_under_a_writer(envtest_cluster: Cluster, tmp_path: Path,
                                        how: str) -> None:
    cluster = envtest_cluster
    names = [f"r{i}" for i in range(10)]
    for name in names:
        cluster.client.create(cluster.obj({"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": name,
                                                        "labels": {"app": "reload"}}}))
    cluster.client.create(cluster.obj({"apiVersion": "v1", "kind": "Secret",
                                       "metadata": {"name": "s1"}}))
    folder = tmp_path / "volume"
    folder.mkdir()
    path = folder / "kinrun.yaml"
    replace_file(path, config(1), how)
    lists_before = lists_of(cluster.server, "configmaps")
    proc = cluster.run(str(path))
    proc.wait_for(r"kinrun running")
    writer = Writer(cluster, names)
    writer.thread.start()
    try:
        steps = [(config(2), "swapped a"), (config(3, extra=True), "added c"),
                 (config(4), "removed c"), (config(5, invalid=True), None),
                 (config(6), "swapped a")]
        reloaded = 0
        for text, expect in steps:
            proc.wait_for(r"begin v\d+ ", count=proc.count(r"begin v\d+ ") + 20)
            replace_file(path, text, how)
            if expect is None:
                proc.wait_for(r"config reload \(file changed\) failed")
                proc.wait_for(r"workerz")
                continue
            reloaded += 1
            line = proc.wait_for(r"config reloaded", count=reloaded)
            assert expect in line and "kept cms" in line, line
        proc.wait_for(r"c v3 \S+/s1")
    finally:
        writer.stop.set()
        writer.thread.join(30)
    last = dict(writer.last)
    for key, rv in last.items():  # the final state's reconcile sees exactly the last write
        proc.wait_for(rf"begin v6 {re.escape(key)} {rv}\b", timeout=60)
    seen = check_versions(proc.lines)
    for key, rv in last.items():
        assert any(v == 6 and r >= rv for v, r in seen[key]), (key, rv, seen[key][-3:])
    assert proc.count(r"config reload \(file changed\) failed") == 1  # logged once
    assert proc.count(r"kinrun running") == 1 and proc.proc.poll() is None  # never restarted
    assert lists_of(cluster.server, "configmaps") - lists_before == 1  # only the first LIST
    proc.stop()


CRD_CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
reload: {pollInterval: 0s, discoveryInterval: 1s}
probes: {port: 0, address: 127.0.0.1}
informers:
  widgets: {apiVersion: GROUP/v1, kind: Widget}
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: widgets
    for: widgets
    reconcile:
      actions: [{log: "widget {{ key }}"}]
"""


def widget_crd(group: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_a_kind_served_after_start_starts_its_informer(envtest_cluster: Cluster,
                                                       tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    cluster = envtest_cluster
    group = f"{cluster.namespace}.kinrun.dev"
    path = tmp_path / "kinrun.yaml"
    path.write_text(CRD_CONFIG.replace("GROUP", group))
    proc = cluster.run(str(path))
    proc.wait_for(r"informer widgets waits: its kind is not served yet")
    port = int(proc.wait_for(r"health probes on http://[\d.]+:(\d+)/").split(":")[-1]
               .split("/")[0])
    proc.wait_for(r"kinrun running")

    def readyz() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
    status, body = readyz()
    assert status == 500 and "informer widgets: waiting" in body, body
    assert proc.count(r"informer widgets waits") == 1  # one line, not one per retry
    crd = cluster.client.create(widget_crd(group))
    try:
        proc.wait_for(r"informer widgets: its kind is served now: started")
        cluster.client.create(cluster.obj({"apiVersion": f"{group}/v1", "kind": "Widget",
                                           "metadata": {"name": "w1"}}))
        proc.wait_for(rf"widget {cluster.namespace}/w1")
        assert readyz()[0] == 200
    finally:
        cluster.client.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                              crd["metadata"]["name"])
    proc.wait_for(r"informer widgets: its kind is not served any more: stopped; "
                  r"controllers widgets wait for it")
    assert readyz()[0] == 500
    assert proc.proc.poll() is None
    proc.stop()


def test_sighup_reloads_without_polling(envtest_cluster: Cluster, tmp_path: Path) -> None:
    """With ``reload.pollInterval: 0s`` a changed file waits for SIGHUP, which reloads it (and
    does not stop kinrun)."""
    import signal

    cluster = envtest_cluster
    cluster.client.create(cluster.obj({"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "h1", "labels": {"app": "reload"}}}))
    path = tmp_path / "kinrun.yaml"
    path.write_text(config(1).replace("pollInterval: 100ms", "pollInterval: 0s"))
    proc = cluster.run(str(path))
    proc.wait_for(rf"begin v1 {cluster.namespace}/h1 ")
    proc.wait_for(r"config reload on SIGHUP only")
    path.write_text(config(2).replace("pollInterval: 100ms", "pollInterval: 0s"))
    proc.proc.send_signal(signal.SIGHUP)
    line = proc.wait_for(r"config reloaded \(SIGHUP")
    assert "swapped a" in line
    proc.wait_for(rf"begin v2 {cluster.namespace}/h1 ")
    assert proc.proc.poll() is None and proc.count(r"config reloaded") == 1
    proc.stop()


def test_a_configmap_rolled_back_to_the_config_in_force_clears_the_rejected_reload(
        envtest_cluster: Cluster, tmp_path: Path) -> None:
    """A rejected edit, then the ConfigMap volume rolled back to the bytes in force: one info
    line naming the hash in force, nothing reloaded (no swap), kinrun still running."""
    import hashlib

    cluster = envtest_cluster
    cluster.client.create(cluster.obj({"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "b1", "labels": {"app": "reload"}}}))
    folder = tmp_path / "volume"
    folder.mkdir()
    path = folder / "kinrun.yaml"
    replace_file(path, config(1), "configmap")
    proc = cluster.run(str(path))
    proc.wait_for(rf"begin v1 {cluster.namespace}/b1 ")
    replace_file(path, config(2, invalid=True), "configmap")
    proc.wait_for(r"config reload \(file changed\) failed")
    replace_file(path, config(1), "configmap")
    line = proc.wait_for(r"back to the config in force")
    assert f"hash {hashlib.sha256(config(1).encode()).hexdigest()[:12]}" in line, line
    assert proc.count(r"config reloaded") == 0 and proc.proc.poll() is None
    proc.stop()

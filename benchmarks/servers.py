"""The API servers the benchmarks run against, and how each is filled with Pods.

``Embedded``: kinrun's ``EmbeddedAPIServer`` in this (the harness's) process. Its store is
written directly (``srv.store``: the server's own write path, storage semantics and watch
history, without HTTP parsing), so preparing 100,000 events takes seconds, and the latency
writer's stamp is taken at the server's write itself.

``Envtest``: a real kube-apiserver + etcd (``kinrun.testing.envtest.EnvtestServer``, assets
from ``$KUBEBUILDER_ASSETS`` or ``scripts/envtest-assets.sh``), filled once per run through its
HTTP API with concurrent creates. ``Envtest.start_or_none(REPLAY_FLAGS)`` starts one that can
replay a long watch history (the ``envtest-events`` workload): see ``REPLAY_FLAGS``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import ssl
import subprocess
import threading
import time
import http.client
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import podgen
from kinrun.testing.apiserver import EmbeddedAPIServer

ROOT = Path(__file__).resolve().parent.parent
MARKER = "bench-marker"
STAMP = "bench/stamp"
FINAL = "bench/final"


class Server:
    """What the harness needs of a server: ``name``, ``kubeconfig`` (a path)."""

    name = ""
    kubeconfig = ""


class Embedded(Server):
    """The embedded API server, retaining ``history`` watch events per resource.

    Not thread-safe except ``StampWriter`` (which writes through the thread-safe store).
    """

    name = "embedded"

    def __init__(self, history: int) -> None:
        self.srv = EmbeddedAPIServer(history_size=history, bookmark_interval=60.0)

    def __enter__(self) -> Embedded:
        self.srv.start()
        self.kubeconfig = self.srv.kubeconfig_path
        return self

    def __exit__(self, *exc: object) -> None:
        self.srv.stop()

    def _namespace(self, ns: str) -> None:
        if not self.srv.store.namespace_exists(ns):
            self.srv.store.create({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": ns}})

    def prepare_history(self, ns: str, pods: int, updates_per_pod: int) -> str:
        """Write ``pods`` creations, then ``updates_per_pod - 1`` rounds of one update per Pod
        (an annotation changes), then the marker Pod with ``bench/final``: ``pods *
        updates_per_pod + 1`` watch events after the returned resourceVersion."""
        self._namespace(ns)
        store = self.srv.store
        since = str(store.resource_version)
        t = time.perf_counter()
        objs = [podgen.make_pod(i, namespace=ns) for i in range(pods)]
        for obj in objs:
            store.create(obj)
        for u in range(1, updates_per_pod):
            for obj in objs:
                obj["metadata"].setdefault("annotations", {})["bench/generation"] = str(u)
                store.update(obj)
        store.create(marker(ns, final=True))
        print(f"  prepared {pods * updates_per_pod + 1} events in "
              f"{time.perf_counter() - t:.1f}s", flush=True)
        return since

    def drop_history(self) -> None:
        """Forget every retained event (frees the memory of the events workload)."""
        self.srv.store.expire_history()

    def prepare_pods(self, ns: str, n: int) -> None:
        """Create ``n`` Pods (with managedFields) in ``ns``, plus the (not final) marker."""
        self._namespace(ns)
        for i in range(n):
            self.srv.store.create(podgen.make_pod(i, namespace=ns))

    def stamp_writer(self, ns: str, pods: int, rate: float, writes: int) -> StampWriter:
        """A writer (not started) for the latency workload; see ``StampWriter``. Deletes the
        previous run's marker first, so that the next contender lists exactly ``pods`` Pods."""
        self.srv.store.delete("v1", "Pod", MARKER, ns)
        return StampWriter(self.srv.store, ns, pods, rate, writes)


def marker(ns: str, *, final: bool) -> dict[str, Any]:
    """The marker Pod: the last object a workload writes (``bench/final`` when ``final``)."""
    pod = podgen.make_pod(999_999, namespace=ns)
    pod["metadata"]["name"] = MARKER
    if final:
        pod["metadata"].setdefault("annotations", {})[FINAL] = "true"
    return pod


class StampWriter:
    """Updates Pods ``0..pods-1`` round-robin at ``rate`` writes/s, ``writes`` times, each with
    ``bench/stamp`` = ``time.time()`` taken inside the store's write; then creates the final
    marker. ``start()`` runs it on a thread (idempotent); ``join()`` waits (returns at once if it
    was never started). ``achieved_rate`` = writes / seconds actually taken."""

    def __init__(self, store: Any, ns: str, pods: int, rate: float, writes: int) -> None:
        self.store, self.ns, self.pods, self.rate, self.writes = store, ns, pods, rate, writes
        self.achieved_rate = 0.0
        self._thread = threading.Thread(target=self._run, name="stamp-writer", daemon=True)
        self._started = False
        self._rtype = store.resolve("v1", "Pod")
        self._names = [podgen.make_pod(i, namespace=ns)["metadata"]["name"] for i in range(pods)]

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def join(self) -> None:
        if self._started:
            self._thread.join()

    def _stamp(self, current: dict) -> dict:
        current["metadata"].setdefault("annotations", {})[STAMP] = repr(time.time())
        return current

    def _run(self) -> None:
        t0 = time.perf_counter()
        for i in range(self.writes):
            delay = t0 + i / self.rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.store.guaranteed_update(self._rtype, self.ns, self._names[i % self.pods],
                                         self._stamp)
        self.achieved_rate = self.writes / (time.perf_counter() - t0)
        with contextlib.suppress(Exception):
            self.store.delete("v1", "Pod", MARKER, self.ns)
        self.store.create(self._stamp(marker(self.ns, final=True)))


#: kube-apiserver flags for a watch from an old resourceVersion over a long history (the
#: ``envtest-events`` workload). kube-apiserver 1.20 serves a watch with a resourceVersion from
#: its watch cache, which grows (100 to 102,400 events per resource) only while its oldest event
#: is younger than 75 s (a size other than 0 in ``--watch-cache-sizes`` is ignored since 1.19):
#: a history written over more than about 75 s has lost its start, and a watch from before it
#: answers 410 Gone ("too old resource version"; seen with 60,001 events written in 107 s,
#: HISTORY.md round 9). ``pods#0``
#: turns the cache off for Pods, so the watch is served from etcd's own history (each watcher
#: its own etcd watch, every event decoded from etcd's protobuf and encoded again for the
#: client, as the cache does once per event); ``--etcd-compaction-interval=0`` stops
#: kube-apiserver compacting etcd every 5 minutes, which would expire the history between the
#: first contender and the last. Pod LISTs are then served from etcd too: only the events
#: workload runs on a server started with these.
REPLAY_FLAGS = ("--watch-cache-sizes=pods#0", "--etcd-compaction-interval=0")


class Envtest(Server):
    """A real kube-apiserver (envtest). ``start_or_none()`` yields None (and sets ``why_not``)
    when the assets cannot be found or built."""

    name = "envtest"
    why_not = ""

    def __init__(self, srv: Any) -> None:
        self.srv = srv
        self.kubeconfig = srv.kubeconfig_path
        # each thread's kept-alive connection to this server (per server: a run starts two)
        self._local = threading.local()

    @classmethod
    @contextlib.contextmanager
    def start_or_none(cls, flags: tuple[str, ...] = ()) -> Iterator[Envtest | None]:
        """Start kube-apiserver (with extra ``flags``) and etcd; yield None when it cannot."""
        from kinrun.testing.envtest import EnvtestServer

        assets = os.environ.get("KUBEBUILDER_ASSETS") or _build_assets()
        if not assets:
            yield None
            return
        try:
            srv = EnvtestServer(assets, apiserver_flags=flags).start()
        except Exception as exc:  # noqa: BLE001  (reported, the other workloads go on)
            cls.why_not = f"envtest did not start: {exc}"[:500]
            yield None
            return
        try:
            yield cls(srv)
        finally:
            srv.stop()

    def prepare_pods(self, ns: str, n: int, workers: int = 16) -> None:
        """Create ``n`` Pods in ``ns`` with ``workers`` concurrent POSTs. The server sets
        status to Pending and writes its own managedFields, so the objects are smaller than
        the embedded server's (their mean size is printed)."""
        self.srv.create_namespace(ns)
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        url = f"{self.srv.url}/api/v1/namespaces/{ns}/pods"
        headers = {"Authorization": f"Bearer {self.srv.token}",
                   "Content-Type": "application/json"}

        def create(i: int) -> int:
            pod = podgen.make_pod(i, namespace=ns, with_managed_fields=False)
            for k in ("uid", "resourceVersion", "creationTimestamp"):
                pod["metadata"].pop(k, None)
            req = urllib.request.Request(url, data=json.dumps(pod).encode(), headers=headers,
                                         method="POST")
            with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
                return len(resp.read())

        t = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            sizes = list(pool.map(create, range(n)))
        print(f"  created {n} Pods in {time.perf_counter() - t:.1f}s, mean "
              f"{sum(sizes) / len(sizes):,.0f} bytes", flush=True)

    def prepare_history(self, ns: str, pods: int, updates_per_pod: int,
                        workers: int = 16) -> str:
        """As ``Embedded.prepare_history`` through kube-apiserver's HTTP API: ``pods``
        creations, then ``updates_per_pod - 1`` rounds of one merge-PATCH per Pod (the
        annotation ``bench/generation`` changes), then the marker Pod with ``bench/final``;
        ``workers`` concurrent requests, each round finished before the next starts. Returns
        the resourceVersion before them (a quorum LIST's): a watch from it replays
        ``pods * updates_per_pod + 1`` events, on a server started with ``REPLAY_FLAGS``."""
        self.srv.create_namespace(ns)
        since = self.get_json(f"/api/v1/namespaces/{ns}/pods?limit=1")["metadata"][
            "resourceVersion"]
        base = f"/api/v1/namespaces/{ns}/pods"
        names = [podgen.make_pod(i, namespace=ns)["metadata"]["name"] for i in range(pods)]

        def create(i: int) -> None:
            pod = podgen.make_pod(i, namespace=ns, with_managed_fields=False)
            for k in ("uid", "resourceVersion", "creationTimestamp"):
                pod["metadata"].pop(k, None)
            self.request("POST", base, pod)

        def update(i: int, u: int) -> None:
            self.request("PATCH", f"{base}/{names[i]}",
                         {"metadata": {"annotations": {"bench/generation": str(u)}}},
                         content_type="application/merge-patch+json")

        t = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, range(pods)))
            for u in range(1, updates_per_pod):
                list(pool.map(update, range(pods), [u] * pods))
        pod = marker(ns, final=True)
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            pod["metadata"].pop(k, None)
        self.request("POST", base, pod)
        took = time.perf_counter() - t
        print(f"  wrote {pods * updates_per_pod + 1} events through kube-apiserver in "
              f"{took:.1f}s ({(pods * updates_per_pod + 1) / took:,.0f} writes/s)", flush=True)
        return since

    def get_json(self, path: str) -> Any:
        """GET ``path`` as the admin (a fresh connection), decoded JSON."""
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        req = urllib.request.Request(f"{self.srv.url}{path}", headers={
            "Authorization": f"Bearer {self.srv.token}", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
            return json.loads(resp.read())

    def stamp_writer(self, ns: str, pods: int, rate: float, writes: int,
                     workers: int = 16) -> EnvtestStampWriter:
        """A writer (not started) for the latency workload on kube-apiserver: see
        ``EnvtestStampWriter``. Deletes the previous run's marker first."""
        # gracePeriodSeconds=0: no kubelet runs here to finish a graceful deletion of a Pod
        # bound to a node, and the next run creates the marker again under the same name.
        self.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{MARKER}?gracePeriodSeconds=0",
                     ok=(200, 202, 404))
        return EnvtestStampWriter(self, ns, pods, rate, writes, workers)

    _ssl: ssl.SSLContext | None = None

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", ok: tuple[int, ...] = (200, 201)) -> int:
        """One HTTP request to the server as its admin, on this thread's kept-alive connection
        (one TLS handshake per thread, not per request); returns the status (raises unless in
        ``ok``)."""
        if Envtest._ssl is None:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            Envtest._ssl = ctx
        conn = getattr(self._local, "conn", None)
        if conn is None:
            host, port = self.srv.url.removeprefix("https://").rsplit(":", 1)
            conn = self._local.conn = http.client.HTTPSConnection(host, int(port), timeout=60,
                                                                  context=Envtest._ssl)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.srv.token}", "Content-Type": content_type}
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()  # reconnect once (the server closed an idle connection)
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            resp.read()
        if resp.status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status}")
        return resp.status


class EnvtestStampWriter:
    """The latency writer for kube-apiserver: ``writes`` merge-PATCHes of Pods ``0..pods-1``
    round-robin, paced at ``rate``/s over ``workers`` threads, each setting ``bench/stamp`` =
    ``time.time()`` taken just before its request (so the latency includes the server's write
    path: admission, etcd, watch cache), then the final marker. Same interface as
    ``StampWriter``; ``achieved_rate`` is what the server took."""

    def __init__(self, srv: Envtest, ns: str, pods: int, rate: float, writes: int,
                 workers: int) -> None:
        self.srv, self.ns, self.pods, self.rate, self.writes = srv, ns, pods, rate, writes
        self.workers = workers
        self.achieved_rate = 0.0
        self._thread = threading.Thread(target=self._run, name="stamp-writer", daemon=True)
        self._started = False
        self._names = [podgen.make_pod(i, namespace=ns)["metadata"]["name"] for i in range(pods)]

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def join(self) -> None:
        if self._started:
            self._thread.join()

    def _patch(self, i: int, t0: float) -> None:
        delay = t0 + i / self.rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        body = {"metadata": {"annotations": {STAMP: repr(time.time()),
                                             "bench/generation": str(i)}}}
        self.srv.request("PATCH", f"/api/v1/namespaces/{self.ns}/pods/"
                         f"{self._names[i % self.pods]}", body,
                         content_type="application/merge-patch+json")

    def _run(self) -> None:
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            for f in [pool.submit(self._patch, i, t0) for i in range(self.writes)]:
                f.result()
        self.achieved_rate = self.writes / (time.perf_counter() - t0)
        pod = marker(self.ns, final=True)
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            pod["metadata"].pop(k, None)
        pod["metadata"]["annotations"][STAMP] = repr(time.time())
        self.srv.request("POST", f"/api/v1/namespaces/{self.ns}/pods", pod)


def _build_assets() -> str:
    """``scripts/envtest-assets.sh`` (cached after the first build): the folder, or ""."""
    try:
        p = subprocess.run(["bash", str(ROOT / "scripts" / "envtest-assets.sh")],
                           capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        Envtest.why_not = f"scripts/envtest-assets.sh: {exc}"
        return ""
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        Envtest.why_not = f"scripts/envtest-assets.sh failed: {p.stderr[-300:]}"
        return ""
    return lines[-1]

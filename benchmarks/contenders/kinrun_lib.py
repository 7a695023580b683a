"""Contender: kinrun's pipeline assembled from the library, as ``kinrun CONFIG`` assembles it.

``Client.from_config`` -> ``client.lister_watcher`` (paged LIST, streamed WATCH, orjson dicts)
-> ``SharedIndexInformer`` (Reflector, DeltaFIFO, indexer; transform ``strip_managed_fields``,
the config's default) -> a handler that enqueues the object's key -> ``Controller`` (one
worker, default rate limiter) -> reconcile. As the main job (``kinrun.manager.Manager.start``):
``gc_tuning.manage()`` (kinrun's GC policy) before the informer starts, ``gc_tuning.freeze()``
once the cache has synced, then the workers.

Variants (``--variant``):
- ``noop``: the reconcile reads the object and returns (the config's ``reconcile: {hooks:
  true}`` with a plugin hook that does nothing);
- ``action``: the reconcile renders one templated ``log`` action at level ``debug`` and
  executes it while the logger is at WARNING: the template is rendered in full (kinrun renders
  every action before sending anything) and nothing is sent or printed;
- ``metadata``: ``noop`` over a metadata-only informer (``metadataOnly: true``: the LIST and
  WATCH ask for PartialObjectMetadata, the cache holds apiVersion/kind/metadata);
- ``prune``: ``noop`` with the pruning transform of ``transform: {drop: PRUNE}`` (what a
  controller that reads labels, owners, the node and the phase can drop);
- ``gc-fix``: ``noop`` plus every LIST run with the collector off and ended with
  ``gc.freeze()`` (the part of the GC policy proposed from these benchmarks that lives in the
  kube layer); not in the default run.

For the ``events`` workload the informer's initial LIST answers nothing at ``--since`` (a
wrapper around the ListerWatcher), so that its watch replays the server's history.
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)

import gc  # noqa: E402
import logging  # noqa: E402
import threading  # noqa: E402

from kinrun.cache import (  # noqa: E402
    FieldPruner,
    ObjectList,
    SharedIndexInformer,
    parse_path,
    strip_managed_fields,
)
try:
    from kinrun.gc import policy as gc_tuning  # noqa: E402
except ImportError:  # a tree before kinrun.gc (startup.py --ab OLD)
    from kinrun.cache import gc_tuning  # type: ignore[attr-defined,no-redef]  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.kube import Client  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402

ACTION = {"log": {"level": "debug", "message": (
    "reconciled Pod {{ obj.metadata.namespace }}/{{ obj.metadata.name }} on "
    "{{ obj.spec.nodeName }} phase={{ obj.status.phase }} "
    "app={{ obj.metadata.labels.app }} images={{ obj.spec.containers | map(attribute='image') "
    "| join(',') }}")}}


PRUNE = ("spec.containers", "spec.volumes", "spec.tolerations", "spec.affinity",
         "status.conditions", "status.containerStatuses")
"""The ``prune`` variant's ``transform.drop``: keeps metadata (the harness reads annotations),
spec.nodeName and the other scalars of spec, status.phase and the IPs."""


class ReplayFrom:
    """A ListerWatcher whose first LIST is empty at ``since``; everything else is ``inner``'s."""

    def __init__(self, inner, since: str) -> None:
        self._inner, self._since, self._listed = inner, since, False

    def list(self, *, resource_version: str = "") -> ObjectList:
        if not self._listed:
            self._listed = True
            return ObjectList(items=[], resource_version=self._since, kind="PodList")
        return self._inner.list(resource_version=resource_version)

    def watch(self, **kwargs):
        return self._inner.watch(**kwargs)


class Opened:
    """A ListerWatcher that records the time of the first request."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def list(self, **kwargs):
        REC.opened()
        if ARGS.variant != "gc-fix":
            return self._inner.list(**kwargs)
        enabled = gc.isenabled()
        gc.disable()
        try:
            result = self._inner.list(**kwargs)
            gc.freeze()  # the decoded pages (acyclic, bound for the cache) leave the young gen
            return result
        finally:
            if enabled:
                gc.enable()

    def watch(self, **kwargs):
        REC.opened()
        return self._inner.watch(**kwargs)


def reconciler(informer: SharedIndexInformer):
    """The reconcile function of the chosen variant."""
    if ARGS.variant != "action":  # noop, gc-fix
        def reconcile(key: str, obj: dict | None) -> None:
            if obj is not None:
                md = obj["metadata"]
                REC.handled(md["name"], md.get("namespace", ""), md.get("annotations"))
        return reconcile

    from kinrun.actions import compile_actions

    program = compile_actions([ACTION], controller="bench")
    log = logging.getLogger("kinrun.controller.bench")
    log.setLevel(logging.WARNING)

    def reconcile_action(key: str, obj: dict | None) -> float | None:
        if obj is None:
            return None
        delay = program.run(key=key, obj=obj, logger=log)
        md = obj["metadata"]
        REC.handled(md["name"], md.get("namespace", ""), md.get("annotations"))
        return delay
    return reconcile_action


def main() -> None:
    client = Client.from_config(kubeconfig=ARGS.kubeconfig, qps=1e6, burst=10**6)
    ref = client.resolve("v1", "Pod")
    lw = Opened(client.lister_watcher(ref, namespace=ARGS.namespace, drop_managed_fields=True,
                                      metadata_only=ARGS.variant == "metadata"))
    if ARGS.workload == "events":
        lw = ReplayFrom(lw, ARGS.since)
    transform = strip_managed_fields
    if ARGS.variant == "prune":
        transform = FieldPruner([parse_path(p) for p in PRUNE])
    informer = SharedIndexInformer(lw, kind="Pod", transform=transform, name="pods")
    queue = RateLimitingQueue(name="bench")
    ctrl = Controller("bench", queue, informer.indexer.get_by_key, reconciler(informer),
                      workers=1)
    informer.add_event_handler(enqueue_own_key(ctrl.enqueue), synchronous=True)
    gc_tuning.manage()
    informer.start()
    informer.wait_for_sync()
    gc_tuning.freeze()
    ctrl.start()


threading.Thread(target=main, daemon=True, name="bench-main").start()
NAMES = {"noop": "kinrun", "action": "kinrun-action", "gc-fix": "kinrun-gc-fix"}
_common.wait_and_emit(NAMES.get(ARGS.variant, f"kinrun-{ARGS.variant}"), ARGS, REC, GCMON, RSS0)

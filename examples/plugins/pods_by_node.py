"""Example hook plugin: index Pods by node and report how many Pods share each Pod's node.

Used by ``examples/configs/pods-by-node.yaml``: the ``pods`` informer declares the index
``byNode: {plugin: true}``, which this plugin supplies through ``kinrun_index_funcs`` (a plain
Python index function, as client-go's ``cache.Indexers``), and the controller's
``reconcile: {hooks: true}`` calls ``kinrun_reconcile`` below, which reads the index through the
lister (``ctx.listers["pods"].by_index("byNode", node)``) instead of listing every Pod.

Logs on ``kinrun.examples.pods_by_node`` at INFO::

    Pod default/web-1 is on node node-a with 2 other pod(s)
    Pod default/web-2 is not scheduled yet
    Pod default/web-3 is gone
"""

from __future__ import annotations

import logging
from typing import Any

from kinrun.hooks import ReconcileContext, hookimpl

INFORMER = "pods"
"""The informer (config name) whose objects are Pods and which gets the index."""
INDEX = "byNode"

logger = logging.getLogger("kinrun.examples.pods_by_node")


def pods_by_node(obj: dict[str, Any]) -> list[str]:
    """Index function: a Pod's ``spec.nodeName`` (none while unscheduled or for other kinds)."""
    if obj.get("kind") not in (None, "Pod"):
        return []
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


@hookimpl
def kinrun_index_funcs(informer: str) -> dict[str, Any]:
    """Supply ``byNode`` for the pods informer only."""
    return {INDEX: pods_by_node} if informer == INFORMER else {}


@hookimpl
def kinrun_reconcile(controller: str, key: str, obj: dict[str, Any] | None,
                     ctx: ReconcileContext) -> None:
    """Log how many other Pods run on this Pod's node, looked up through the index."""
    if obj is None:
        logger.info("Pod %s is gone", key)
        return
    nodes = pods_by_node(obj)
    if not nodes:
        logger.info("Pod %s is not scheduled yet", key)
        return
    lister = ctx.listers.get(INFORMER)
    if lister is None:
        logger.warning("controller %s has no informer %r to look pods up in", controller, INFORMER)
        return
    others = len(lister.by_index(INDEX, nodes[0])) - 1
    logger.info("Pod %s is on node %s with %d other pod(s)", key, nodes[0], max(others, 0))

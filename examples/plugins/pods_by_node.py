"""Placeholder plugin for examples/configs/pods-by-node.yaml.

TODO(D2): replace with the real plugin: a ``kinrun_reconcile`` hook that, for a Pod key, looks
up the pods on the same node through the pods informer's ``byNode`` index and logs the count.
This placeholder exists so that the config's plugin path resolves (``kinrun validate`` checks
plugin files exist); it implements the hook with the contract's signature and only logs.
"""

from __future__ import annotations

import logging

import pluggy

hookimpl = pluggy.HookimplMarker("kinrun")

_log = logging.getLogger("kinrun.examples.pods_by_node")


@hookimpl
def kinrun_reconcile(controller, key, obj, ctx):  # noqa: ANN001 - placeholder, see TODO
    """Log the pod's node (placeholder)."""
    node = (obj or {}).get("spec", {}).get("nodeName") or "<unscheduled>"
    _log.info("Pod %s is on node %s", key, node)

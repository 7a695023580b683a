"""The seed's example controller as a plugin: log what happens to Pods.

Prints, from ``kinrun_reconcile`` on logger ``kinrun.plugins.pod_logger`` at INFO, the same lines
as client-go's workqueue example: ``Sync/Add/Update for Pod <name>`` while the object exists and
``Pod <key> does not exist anymore`` once it is gone. Enable it by listing
``kinrun.plugins.pod_logger`` in the config's ``plugins:`` and using ``reconcile: {hooks: true}``
(or ``hooks: [kinrun.plugins.pod_logger]``) on a controller whose primary informer watches Pods.
"""

from __future__ import annotations

import logging
from typing import Any

from kinrun.hooks import ReconcileContext, hookimpl

logger = logging.getLogger("kinrun.plugins.pod_logger")


@hookimpl
def kinrun_reconcile(controller: str, key: str, obj: dict[str, Any] | None,
                     ctx: ReconcileContext) -> None:
    """Log one line per reconcile; never asks for a requeue."""
    if obj is None:
        logger.info("Pod %s does not exist anymore", key)
    else:
        logger.info("Sync/Add/Update for Pod %s", (obj.get("metadata") or {}).get("name"))

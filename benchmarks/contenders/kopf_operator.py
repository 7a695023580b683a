"""Contender: kopf with one ``@kopf.on.event`` handler on Pods (an ``async def`` that does nothing).

Standalone (no peering), event posting off, kopf's logging at WARNING; logs in via the
kubeconfig (``KUBECONFIG``) as kopf does by default. For the ``events`` workload its initial
chunked LIST answers nothing at ``--since`` (``kopf._cogs.clients.fetching.fetch_objs`` is
replaced in this process), so that its watch replays the server's history; the watch itself is
kopf's own, unchanged.
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)

import asyncio  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402

os.environ["KUBECONFIG"] = ARGS.kubeconfig

import kopf  # noqa: E402
from kopf._cogs.clients import fetching  # noqa: E402

_real_fetch_objs = fetching.fetch_objs


async def _fetch_objs(**kwargs):
    REC.opened()
    if ARGS.workload == "events" and kwargs["resource"].plural == "pods":
        yield [], ARGS.since
        return
    async for chunk, rv in _real_fetch_objs(**kwargs):
        yield chunk, rv


fetching.fetch_objs = _fetch_objs


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_) -> None:
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.watching.server_timeout = 600
    settings.watching.client_timeout = 700


@kopf.on.event("v1", "pods")
async def on_event(name, namespace, annotations, **_) -> None:
    REC.handled(name, namespace, annotations)


def run() -> None:
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(kopf.operator(standalone=True, namespaces=[ARGS.namespace]))


threading.Thread(target=run, daemon=True, name="kopf").start()
_common.wait_and_emit("kopf", ARGS, REC, GCMON, RSS0)
